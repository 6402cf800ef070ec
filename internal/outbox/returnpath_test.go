package outbox

import (
	"regexp"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/token"
)

// With a bounce address, each email's envelope sender is its own VERP
// address and List-Unsubscribe lists a mailto after the one-click URL;
// both tokens name the outbox row, in either case.
func TestOutboxReturnPath(t *testing.T) {
	fx := newFixture(t)
	fx.links = fx.links.WithBounce("bounces@Mail.Example.com")
	srv := smtptest.StartT(t, smtptest.Options{})
	u, sub := fx.user("reader@example.net", 10)
	rows := []int64{fx.queueItem(u, sub).ID, fx.queueItem(u, sub).ID}
	ob := fx.outbox(smtpTo(t, srv, ""), "w1")
	if n := fx.pass(ob); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	verp := regexp.MustCompile(`^bounces\+([a-z2-7]{30,40})@mail\.example\.com$`)
	mailto := regexp.MustCompile(`^<https://feedmail\.example\.com/unsubscribe/[^>]+>, <mailto:bounces\+([a-z2-7]{30,40})@mail\.example\.com\?subject=unsubscribe>$`)
	seen := map[int64]bool{}
	for _, m := range srv.Messages() {
		env := verp.FindStringSubmatch(m.From)
		if env == nil {
			t.Fatalf("envelope sender %q is not a VERP address on the bounce address", m.From)
		}
		id, purpose, err := fx.links.ResolveReturn(strings.ToUpper(env[1]), t0)
		if err != nil || purpose != token.Return {
			t.Fatalf("envelope token %q: %d %q %v", env[1], id, purpose, err)
		}
		seen[id] = true
		lu := mailto.FindStringSubmatch(m.Header.Get("List-Unsubscribe"))
		if lu == nil {
			t.Fatalf("List-Unsubscribe = %q", m.Header.Get("List-Unsubscribe"))
		}
		uid, purpose, err := fx.links.ResolveReturn(lu[1], t0)
		if err != nil || purpose != token.MailUnsubscribe || uid != id {
			t.Fatalf("mailto token names %d (%q, %v), envelope %d", uid, purpose, err, id)
		}
		if m.Header.Get("From") != `"Example Blog via feedmail" <feedmail@example.com>` {
			t.Errorf("From = %q: the header From stays FEEDMAIL_FROM", m.Header.Get("From"))
		}
	}
	for _, id := range rows {
		if !seen[id] {
			t.Errorf("no email's envelope names row %d (seen %v)", id, seen)
		}
	}
	if _, _, err := fx.links.ResolveReturn(strings.Repeat("a", 36), t0); err == nil {
		t.Error("a made-up token resolved")
	}
}
