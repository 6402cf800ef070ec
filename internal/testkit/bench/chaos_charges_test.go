package bench

import (
	"slices"
	"testing"
)

// TestHoldCharges: each way the ledger can disagree with what was
// received is caught, and an honest ledger passes.
func TestHoldCharges(t *testing.T) {
	type entry = struct {
		IdempotencyKey string
		Kind           string
		Amount         int64
	}
	charge := func(dk string) entry { return entry{"charge:" + dk, "charge", -1} }
	refund := func(dk string) entry { return entry{"refund:charge:" + dk, "refund", 1} }
	state := map[string]string{"item:1:1": "sent", "item:1:2": "sent", "digest:3": "sent", "item:2:1": "failed", "item:2:2": "queued"}
	tests := []struct {
		name                                   string
		received                               []string
		entries                                []entry
		once                                   int
		uncharged, refundedRecv, chargedUnrecv int
		inFlight                               int
	}{
		{name: "honest", received: []string{"item:1:1", "digest:3"},
			entries: []entry{charge("item:1:1"), charge("digest:3"), charge("item:2:1"), refund("item:2:1"), charge("item:2:2")},
			once:    2, inFlight: 1},
		{name: "received, never charged", received: []string{"item:1:1", "item:1:2"}, entries: []entry{charge("item:1:1")},
			once: 1, uncharged: 1},
		{name: "refunded though received", received: []string{"item:1:1"}, entries: []entry{charge("item:1:1"), refund("item:1:1")},
			refundedRecv: 1},
		{name: "charged, sent, never received", received: nil, entries: []entry{charge("item:1:1")}, chargedUnrecv: 1},
		{name: "failed and not refunded", received: nil, entries: []entry{charge("item:2:1")}, chargedUnrecv: 1},
		{name: "other charges are not ours", received: nil, entries: []entry{{"charge:owner:1", "charge", -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recv := map[string]bool{}
			for _, dk := range tt.received {
				recv[dk] = true
			}
			ch := holdCharges(recv, state, tt.entries)
			inFlight := 0
			for _, n := range ch.InFlight {
				inFlight += n
			}
			if ch.ChargedOnce != tt.once || len(ch.Uncharged) != tt.uncharged || len(ch.RefundedReceived) != tt.refundedRecv ||
				len(ch.ChargedUnreceived) != tt.chargedUnrecv || inFlight != tt.inFlight {
				t.Errorf("got %+v", ch)
			}
			want := tt.uncharged+tt.refundedRecv+tt.chargedUnrecv == 0
			if ch.ok() != want {
				t.Errorf("ok() = %v, want %v", ch.ok(), want)
			}
			if slices.Contains(ch.ChargedUnreceived, "owner:1 ()") {
				t.Errorf("an owner charge was taken for a delivery: %v", ch.ChargedUnreceived)
			}
		})
	}
}
