package outbox

import (
	"context"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestOutboxDatesInReadersZone: an instant email dates its post in the
// reader's time zone. The fixture's post is published at 08:00 UTC on
// March 2, which is 23:00 on March 1 in Anchorage.
func TestOutboxDatesInReadersZone(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	for _, tc := range []struct{ email, zone, want string }{
		{"utc@example.net", "", "March 2, 2026"},
		{"anchorage@example.net", "America/Anchorage", "March 1, 2026"},
	} {
		u, sub := fx.user(tc.email, 10)
		if tc.zone != "" {
			if err := fx.s.SetUserTimezone(context.Background(), u.ID, tc.zone); err != nil {
				t.Fatal(err)
			}
		}
		fx.queueItem(u, sub)
		fx.pass(fx.outbox(smtpTo(t, srv, ""), "w1"))
		var found bool
		for _, m := range srv.Messages() {
			if !strings.Contains(m.Header.Get("To"), tc.email) {
				continue
			}
			found = true
			text, html := testutil.MailParts(t, m.Raw)
			if !strings.Contains(text, "By Ann Author · "+tc.want) || !strings.Contains(html, "By Ann Author · "+tc.want) {
				t.Errorf("%s (%q): post not dated %s:\n%s", tc.email, tc.zone, tc.want, text)
			}
		}
		if !found {
			t.Fatalf("no email to %s among %d", tc.email, len(srv.Messages()))
		}
	}
}
