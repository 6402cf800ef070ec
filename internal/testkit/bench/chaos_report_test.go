package bench

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestChaosReportHoldsResendsAgainstLostReplies: messages sent again after
// a reply lost after the dot are within SMTP's window up to the drops the
// sink injected plus the messages it took after a killed sender had hung
// up, plus the webhooks whose 2xx a killed sender never got; one more
// fails the run.
func TestChaosReportHoldsResendsAgainstLostReplies(t *testing.T) {
	for _, c := range []struct {
		inside, drops, gone, hooks int
		fail                       bool
	}{
		{inside: 3, drops: 3},
		{inside: 4, drops: 3, gone: 1},
		{inside: 5, drops: 3, gone: 1, fail: true},
		{inside: 5, drops: 3, gone: 1, hooks: 1},
		{inside: 1, gone: 0, fail: true},
	} {
		r := &ChaosReport{Expected: 10, InsideMsgs: c.inside, HookRepliesLost: int64(c.hooks),
			SMTP: smtptest.FaultCounts{DroppedAfterDot: int64(c.drops), ClientGone: int64(c.gone)}}
		f := strings.Join(r.failures(), "; ")
		if got := strings.Contains(f, "reply lost after the dot"); got != c.fail {
			t.Errorf("%d resent, %d drops, %d hang-ups: failures %q, want failing %v", c.inside, c.drops, c.gone, f, c.fail)
		}
	}
}
