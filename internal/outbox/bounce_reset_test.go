package outbox

import (
	"context"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestAcceptanceResetsOnlyCountedBounces: an email accepted for a person
// with hard bounces counted resets the count; the marks of people with
// none skip the reset (their statement is the fan-out's cost), and leave
// a count of zero alone.
func TestAcceptanceResetsOnlyCountedBounces(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	bounced, bsub := fx.user("bounced@example.net", 5)
	clean, csub := fx.user("clean@example.net", 5)
	if err := fx.s.DB.Model(&store.User{}).Where("id = ?", bounced.ID).Update("hard_bounces", 2).Error; err != nil {
		t.Fatal(err)
	}
	fx.queueItem(bounced, bsub)
	fx.queueItem(clean, csub)
	if n := fx.pass(fx.outbox(smtpTo(t, srv, ""), "w")); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	for _, u := range []*store.User{bounced, clean} {
		got, err := fx.s.UserByID(context.Background(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.HardBounces != 0 {
			t.Errorf("%s: hard_bounces %d after an accepted email, want 0", u.Email, got.HardBounces)
		}
	}
	if len(srv.Messages()) != 2 {
		t.Errorf("%d emails arrived, want 2", len(srv.Messages()))
	}
}
