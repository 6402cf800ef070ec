package outbox

import (
	"strconv"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestOutboxFeedbackHeaders: every email names its feed (and, for an
// owner-paid feed, its owner) in Feedback-ID; with a bounce address it
// carries CFBL-Address, its own return address, for ARF reports; without
// one, none.
func TestOutboxFeedbackHeaders(t *testing.T) {
	for _, bounceAddr := range []string{"", "bounces@mail.example.com"} {
		t.Run("bounce="+bounceAddr, func(t *testing.T) {
			fx := newFixture(t)
			if bounceAddr != "" {
				fx.links = fx.links.WithBounce(bounceAddr)
			}
			srv := smtptest.StartT(t, smtptest.Options{})
			u, sub := fx.user("reader@example.net", 10)
			plain := fx.queueItem(u, sub)
			ob := fx.outbox(smtpTo(t, srv, ""), "w1")
			if n := fx.pass(ob); n != 1 {
				t.Fatalf("claimed %d, want 1", n)
			}

			// The feed becomes owner-paid: the next email names the owner.
			owner, _ := fx.user("publisher@example.org", 10)
			if err := fx.s.DB.Create(&store.FeedOwner{FeedID: fx.feed.ID, UserID: owner.ID, VerifiedBy: store.OwnerByOperator}).Error; err != nil {
				t.Fatal(err)
			}
			paid := fx.queueItem(u, sub)
			if n := fx.pass(ob); n != 1 {
				t.Fatalf("claimed %d, want 1", n)
			}
			want := map[string]string{
				fx.row(plain.ID).MessageID: strconv.FormatInt(fx.feed.ID, 10) + ":0:item:feedmail",
				fx.row(paid.ID).MessageID:  strconv.FormatInt(fx.feed.ID, 10) + ":" + strconv.FormatInt(owner.ID, 10) + ":item:feedmail",
			}
			for _, m := range srv.Messages() {
				id := m.Header.Get("Message-Id")
				if got := m.Header.Get("Feedback-ID"); got != want[id] {
					t.Errorf("%s: Feedback-ID %q, want %q", id, got, want[id])
				}
				cfbl := m.Header.Get("CFBL-Address")
				switch {
				case bounceAddr == "" && cfbl != "":
					t.Errorf("%s: CFBL-Address %q without a bounce address", id, cfbl)
				case bounceAddr != "" && cfbl != m.From+"; report=arf":
					t.Errorf("%s: CFBL-Address %q, want the return address %q with report=arf", id, cfbl, m.From)
				}
			}
			if len(srv.Messages()) != 2 {
				t.Errorf("%d messages on the wire, want 2", len(srv.Messages()))
			}
		})
	}
}
