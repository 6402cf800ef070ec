package outbox

import (
	"context"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestOutboxBouncingHoldsFreePosts: to an address marked bouncing, a post
// that is free to its reader (it came in a burst) waits like a paid one,
// never attempted, while a notice still goes: the bounce hold is the
// store's one rule, whatever the row costs.
func TestOutboxBouncingHoldsFreePosts(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1")
	ctx := context.Background()
	u, sub := fx.user("gone@example.net", 10)
	if err := fx.s.DB.Model(&store.User{}).Where("id = ?", u.ID).Updates(map[string]any{
		"hard_bounces": 3, "bouncing_since": fx.clk.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	paid, free := fx.queueItem(u, sub), fx.queueItem(u, sub)
	if err := fx.s.DB.Model(&store.OutboxRow{}).Where("id = ?", free.ID).
		Updates(map[string]any{"credits": 0, "free_reason": "burst: free"}).Error; err != nil {
		t.Fatal(err)
	}
	if ok, err := fx.s.QueueNotice(ctx, u.ID, "confirm:gone", store.Notice{Subject: "Confirm", Text: "Confirm your address."}); err != nil || !ok {
		t.Fatalf("QueueNotice = %v, %v", ok, err)
	}
	fx.pass(ob)
	for _, r := range []*store.OutboxRow{paid, free} {
		if got := fx.row(r.ID); got.State != store.OutboxHeld || got.LastError != store.HoldBouncing {
			t.Errorf("post of %d credits to a bouncing address: %s %q, want held", got.Credits, got.State, got.LastError)
		}
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("%d messages reached the server, want 1 (the notice)", n)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 0 {
		t.Errorf("ledger %v: nothing held may be charged", e)
	}
}
