package outbox

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// TestHealth: the complaint line, the pause as of now, and what to fix.
func TestHealth(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	rows := []store.DomainHealth{
		{Domain: "at-line.example", Sent: 1000, Complaints: 3},
		{Domain: "over.example", Sent: 1000, Complaints: 4, Sender: map[string]int64{"authentication": 2, "policy": 1}},
		{Domain: "none-sent.example", Complaints: 1},
		{Domain: "pause-over.example", Sent: 5, Pause: &store.MailDestination{PausedUntil: now, Reason: "blocked", Failures: 3}},
		{Domain: "paused.example", Pause: &store.MailDestination{PausedUntil: now.Add(time.Minute), Reason: "rate-limited", Failures: 2}},
	}
	got := Health(rows, now)
	want := []struct {
		over, paused bool
		n            int // sentences
		checks       []string
	}{
		{false, false, 0, nil},
		{true, false, 3, []string{"4 spam complaints for 1000 emails sent (0.40 %)", "2 emails refused as authentication: check the SPF record", "1 email refused as policy"}},
		{true, false, 1, []string{"1 spam complaint for 0 emails sent"}},
		{false, false, 0, nil},
		{false, true, 1, []string{"waits until 2026-03-02T09:01:00Z", "rate-limited, 2 pauses in a row"}},
	}
	for i, w := range want {
		h := got[i]
		all := strings.Join(h.Check, "\n")
		if h.Domain != rows[i].Domain || h.OverComplaintLine != w.over || h.Paused != w.paused || len(h.Check) != w.n ||
			hasAll(all, w.checks...) != "" || h.SenderSide["blocked"] != 0 {
			t.Errorf("%s: over %v paused %v check %q; want over %v paused %v and %q", h.Domain, h.OverComplaintLine, h.Paused,
				h.Check, w.over, w.paused, w.checks)
		}
	}
	if got[1].ComplaintRate != 0.004 || got[2].ComplaintRate != 0 {
		t.Errorf("rates %v %v", got[1].ComplaintRate, got[2].ComplaintRate)
	}
}
