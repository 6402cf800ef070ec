package dendritetest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStartSendRead starts Dendrite, sends two messages into the room the
// way a client does (the second twice, with one transaction id) and reads
// them back: the homeserver keeps one event per transaction id.
func TestStartSendRead(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	for _, m := range []struct{ txn, body string }{{"t1", "first"}, {"t2", "second"}, {"t2", "second"}, {"t3", "marker"}} {
		if err := s.Send(ctx, m.txn, m.body); err != nil {
			t.Fatalf("send %s: %v", m.txn, err)
		}
	}
	msgs, err := s.WaitMessages(ctx, time.Minute, func(ms []Message) bool { return len(ms) > 0 && ms[len(ms)-1].Content.Body == "marker" })
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, m.Content.Body)
	}
	if got := strings.Join(bodies, ","); got != "first,second,marker" {
		t.Fatalf("room holds %q, want first,second,marker", got)
	}
}
