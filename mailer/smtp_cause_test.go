package mailer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestFailureCause: a message whose connection is lost after the whole
// message went out, or whose reply never comes, is an unknown outcome —
// the server kept it in the first case — told apart from refusals (4xx,
// 5xx) and from failures where the server cannot have it.
func TestFailureCause(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     smtptest.Options
		rcpt     string
		timeout  time.Duration
		want     string
		accepted int
	}{
		{"dropped after the final dot", smtptest.Options{DropAfterData: []string{"x@example.org"}}, "x@example.org", 0, CauseUnknownOutcome, 1},
		{"no reply to the final dot", smtptest.Options{Stall: []string{"x@example.org"}}, "x@example.org", 300 * time.Millisecond, CauseUnknownOutcome, 0},
		{"450 at RCPT TO", smtptest.Options{TempFail: []string{"x@example.org"}}, "x@example.org", 0, CauseReply4xx, 0},
		{"550 at RCPT TO", smtptest.Options{PermFail: []string{"x@example.org"}}, "x@example.org", 0, CauseReply5xx, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startSMTP(t, c.opts)
			tr := newTransport(t, srv, 1)
			ctx := testCtx(t)
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			errs := tr.Send(ctx, itemsTo(t, c.rcpt))
			if errs[0] == nil {
				t.Fatal("the send succeeded")
			}
			if got := FailureCause(errs[0]); got != c.want {
				t.Errorf("FailureCause(%v) = %q, want %q", errs[0], got, c.want)
			}
			if got := srv.Count(); got != c.accepted {
				t.Errorf("the server kept %d messages, want %d", got, c.accepted)
			}
		})
	}
}

// TestFailureCauseWithoutReply: failures without an SMTP exchange.
func TestFailureCauseWithoutReply(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("disk full"), CauseOther},
		{&SendError{Stage: StageConnect, Code: 535, Temporary: false}, CauseConnect},
		{&SendError{Stage: "MAIL FROM", Temporary: true, Err: errors.New("EOF")}, CauseNoReply},
		{&SendError{Stage: "RCPT TO", Temporary: true, Err: context.DeadlineExceeded}, CauseTimeout},
		{temporary(context.DeadlineExceeded, "waiting for an smtp connection"), CauseTimeout},
		{temporary(ErrClosed, "smtp transport closed"), CauseOther},
	} {
		if got := FailureCause(c.err); got != c.want {
			t.Errorf("FailureCause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
