package outbox

import (
	"errors"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/mailer"
)

// A failed send is judged by its cause, not its code class (package
// bounce, the one judgement for SMTP replies, bounces by mail and email
// services' notifications). judgeSend reads the verdict from a send
// error; decide turns it into what the outbox does with the row.

// action is what the outbox does with a row whose send failed.
type action int

const (
	// retryLater: put the row back with its own backoff (4xx, a dropped
	// connection, a timeout), for up to RetryFor in attempts.
	retryLater action = iota
	// slowDestination: the destination refused our mail for the sender's
	// own sake. Nothing counts against the reader; the recipient's domain
	// is paused (DestinationPause) and the row is due again when the
	// pause ends, without an attempt counted.
	slowDestination
	// failRow: fail the row, refund it, count nothing against the reader.
	failRow
	// failHard: fail the row, refund it, count a hard bounce against the
	// reader's address (three in a row mark it bouncing).
	failHard
)

// String names a for tests and logs.
func (a action) String() string {
	return [...]string{"retry", "slow-destination", "fail", "fail-hard"}[a]
}

// decide returns what to do with a failure judged v that the transport
// called temporary (4xx, no reply) or not (5xx): the sender's own problems
// slow the destination whatever the code class; a reader whose mailbox
// takes mail too fast (RecipientBusy) has that one email retried, whatever
// the class, and nobody else's mail waits; otherwise a temporary failure
// is retried, and a permanent one fails, counted hard only when its
// reason says the reader's address is dead.
func decide(v bounce.Verdict, temporary bool) action {
	switch {
	case v.Party == bounce.PartySender:
		return slowDestination
	case temporary, v.Reason == bounce.RecipientBusy:
		return retryLater
	case v.Party == bounce.PartyReader && v.Severity == bounce.Hard:
		return failHard
	default:
		return failRow
	}
}

// judgeSend returns the verdict on a send error and the SMTP reply it
// judged: a reply about the message (a code, at MAIL FROM, RCPT TO, DATA
// …) goes through bounce.Judge, a 4xx as a delayed failure; anything else
// (no reply, a connection-level failure, a render or disk error) says
// nothing about the destination and is Temporary or Undetermined, party
// none, with a nil reply.
func judgeSend(err error) (bounce.Verdict, *mailer.SendError) {
	temporary := errors.Is(err, mailer.ErrTemporary)
	var se *mailer.SendError
	if errors.As(err, &se) && se.Code != 0 && se.Stage != mailer.StageConnect {
		return bounce.Judge(bounce.Failure{Status: se.EnhancedCode, Code: se.Code, Text: se.Msg, Delayed: temporary}), se
	}
	r := bounce.Undetermined
	if temporary {
		r = bounce.Temporary
	}
	return bounce.Verdict{Reason: r, Party: r.Party(), Severity: r.Severity(), Permanent: !temporary}, nil
}

// replyStatus is the status a mail event keeps of se: the enhanced code,
// else the reply code.
func replyStatus(se *mailer.SendError) string {
	if se.EnhancedCode != "" {
		return se.EnhancedCode
	}
	return strconv.Itoa(se.Code)
}

// Destination pauses: DestinationPauseBase doubling per consecutive pause
// of a domain, capped at DestinationPauseCap; a streak whose last pause
// ended more than destinationForget ago starts again.
const (
	DestinationPauseBase = 5 * time.Minute
	DestinationPauseCap  = 6 * time.Hour
	destinationForget    = 24 * time.Hour
)

// DestinationPause returns how long a destination is paused after the
// streak-th consecutive sender-side failure (1-based): 5 min, 10 min,
// 20 min … 6 h. Long enough for a rate limit to pass and for an operator
// to act on a blocklisting, short enough that mail flows again within
// minutes of a fix.
func DestinationPause(streak int) time.Duration {
	return doubling(DestinationPauseBase, DestinationPauseCap, streak)
}
