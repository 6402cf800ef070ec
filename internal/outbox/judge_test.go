package outbox

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/mailer"
)

// TestDecide: which verdict fails, retries, counts against the reader or
// slows the destination, for both code classes.
func TestDecide(t *testing.T) {
	cases := []struct {
		reason    bounce.Reason
		temporary bool
		want      action
	}{
		// The reader's address is dead: a 5xx counts hard, a 4xx retries.
		{bounce.UnknownUser, false, failHard},
		{bounce.UnknownDomain, false, failHard},
		{bounce.Moved, false, failHard},
		{bounce.NotAccepting, false, failHard},
		{bounce.UnknownUser, true, retryLater},
		// The reader's soft reasons and their own filters: failed, not
		// counted; retried when temporary.
		{bounce.MailboxFull, false, failRow},
		{bounce.TooLarge, false, failRow},
		{bounce.Filtered, false, failRow},
		{bounce.MailboxFull, true, retryLater},
		// A reader's mailbox that takes mail too fast: that email waits,
		// whatever the class; nothing slows the domain.
		{bounce.RecipientBusy, true, retryLater},
		{bounce.RecipientBusy, false, retryLater},
		// The sender's own problems, whatever the code class.
		{bounce.Blocked, false, slowDestination},
		{bounce.Blocked, true, slowDestination},
		{bounce.Authentication, false, slowDestination},
		{bounce.Policy, false, slowDestination},
		{bounce.RateLimited, true, slowDestination},
		{bounce.RateLimited, false, slowDestination},
		{bounce.Syntax, false, slowDestination},
		// Nobody's: 4xx retried, 5xx failed without counting.
		{bounce.Temporary, true, retryLater},
		{bounce.Undetermined, true, retryLater},
		{bounce.Temporary, false, failRow},
		{bounce.Undetermined, false, failRow},
		{bounce.Expired, false, failRow},
	}
	for _, c := range cases {
		f := bounce.Failure{Hint: c.reason, Delayed: c.temporary}
		v := bounce.Judge(f)
		if v.Reason != c.reason {
			t.Fatalf("the hint %s was judged %s", c.reason, v.Reason)
		}
		if got := decide(v, c.temporary); got != c.want {
			t.Errorf("decide(%s, temporary %v) = %s, want %s", c.reason, c.temporary, got, c.want)
		}
	}
}

// TestJudgeSend: SMTP replies about the message are judged by their cause;
// failures without a reply, or at the connection, are not.
func TestJudgeSend(t *testing.T) {
	rcpt := func(code int, enh, msg string) *mailer.SendError {
		return &mailer.SendError{Code: code, EnhancedCode: enh, Msg: msg, Stage: "RCPT TO", Temporary: code < 500}
	}
	cases := []struct {
		err    error
		reason bounce.Reason
		party  bounce.Party
		want   action
		reply  bool
	}{
		{rcpt(550, "5.1.1", "No such user here"), bounce.UnknownUser, bounce.PartyReader, failHard, true},
		{rcpt(550, "5.2.1", "The email account that you tried to reach is disabled"), bounce.NotAccepting, bounce.PartyReader, failHard, true},
		{rcpt(552, "", "Requested mail action aborted: exceeded storage allocation"), bounce.MailboxFull, bounce.PartyReader, failRow, true},
		{rcpt(552, "5.3.4", "Message too big for system"), bounce.TooLarge, bounce.PartyReader, failRow, true},
		{rcpt(554, "5.7.1", "Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org"), bounce.Blocked, bounce.PartySender, slowDestination, true},
		{rcpt(550, "5.7.26", "Unauthenticated email from example.com is not accepted due to domain's DMARC policy"), bounce.Authentication, bounce.PartySender, slowDestination, true},
		{rcpt(554, "5.6.0", "Message content rejected"), bounce.Policy, bounce.PartySender, slowDestination, true},
		{rcpt(550, "5.7.1", "Message rejected as spam by Content Filtering"), bounce.Policy, bounce.PartySender, slowDestination, true},
		{rcpt(421, "4.7.28", "Our system has detected an unusual rate of unsolicited mail"), bounce.RateLimited, bounce.PartySender, slowDestination, true},
		{rcpt(450, "4.2.0", "Mailbox temporarily unavailable"), bounce.Temporary, bounce.PartyNone, retryLater, true},
		{rcpt(451, "4.7.1", "Greylisted, please try again later"), bounce.Temporary, bounce.PartyNone, retryLater, true},
		{rcpt(550, "", "Rejected"), bounce.Undetermined, bounce.PartyNone, failRow, true},
		// Not about the message: the relay refused the login; no reply at all.
		{&mailer.SendError{Code: 535, EnhancedCode: "5.7.8", Msg: "Authentication failed", Stage: mailer.StageConnect, Temporary: true},
			bounce.Temporary, bounce.PartyNone, retryLater, false},
		{&mailer.SendError{Msg: "connection reset by peer", Stage: "DATA", Temporary: true}, bounce.Temporary, bounce.PartyNone, retryLater, false},
		{fmt.Errorf("%w: broken template", mailer.ErrPermanent), bounce.Undetermined, bounce.PartyNone, failRow, false},
	}
	for _, c := range cases {
		v, reply := judgeSend(c.err)
		got := decide(v, errors.Is(c.err, mailer.ErrTemporary))
		if v.Reason != c.reason || v.Party != c.party || got != c.want || (reply != nil) != c.reply {
			t.Errorf("%v: %s/%s → %s (reply %v), want %s/%s → %s (reply %v)", c.err, v.Reason, v.Party, got, reply != nil,
				c.reason, c.party, c.want, c.reply)
		}
	}
	if v, _ := judgeSend(rcpt(450, "4.1.1", "Recipient address rejected: User unknown")); v.Severity != bounce.Soft {
		t.Errorf("a 4xx unknown user counts %q, want soft (it is retried)", v.Severity)
	}
}

func TestDestinationPause(t *testing.T) {
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute,
		160 * time.Minute, 320 * time.Minute, 6 * time.Hour, 6 * time.Hour}
	for i, w := range want {
		if got := DestinationPause(i + 1); got != w {
			t.Errorf("DestinationPause(%d) = %v, want %v", i+1, got, w)
		}
	}
	if DestinationPause(0) != DestinationPauseBase || DestinationPause(1000) != DestinationPauseCap {
		t.Error("out-of-range streaks")
	}
}
