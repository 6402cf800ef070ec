package mailer

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/wneessen/go-mail"
)

// classifySMTP turns a go-mail send error into a SendError (nil when the
// message was in fact delivered), whether the connection can be kept, and
// whether a retry on a new connection is safe (see classifyReply).
func classifySMTP(err error, m *mail.Msg) (serr *SendError, keepConn, safeRetry bool) {
	var mse *mail.SendError
	if !errors.As(err, &mse) {
		return temporary(err, "smtp: %v", err), false, false
	}
	code := mse.ErrorCode()
	v := classifyReply(mse.Reason, code, m.IsDelivered())
	if v.delivered {
		return nil, false, false
	}
	se := &SendError{Code: code, EnhancedCode: mse.EnhancedStatusCode(), Msg: replyText(mse.Error(), code),
		Stage: stages[mse.Reason], Temporary: v.temporary, Err: err}
	return se, v.keepConn, v.safeRetry
}

// replyVerdict is what a failed SMTP step means for the message and for
// the connection it was sent on.
type replyVerdict struct {
	delivered bool // accepted after all: only the RSET after it failed
	temporary bool // a retry may succeed (4xx, no reply); else permanent
	keepConn  bool // the session can carry the next message
	safeRetry bool // the server cannot have seen the message: resend now
}

// classifyReply decides a failed send from the step that failed (reason),
// the server's reply code (0: no reply) and whether the message was
// delivered: 5xx is permanent and 4xx temporary, both keeping the
// connection; 421 and no reply are temporary and drop it; a message that
// cannot be sent at all (bad address, 8-bit body) is permanent; a dead
// connection found before MAIL FROM got a reply may be retried at once.
func classifyReply(reason mail.SendErrReason, code int, delivered bool) replyVerdict {
	switch reason {
	case mail.ErrGetSender, mail.ErrGetRcpts, mail.ErrNoUnencoded:
		return replyVerdict{keepConn: true}
	case mail.ErrSMTPReset:
		if delivered {
			return replyVerdict{delivered: true}
		}
	case mail.ErrConnCheck:
		return replyVerdict{temporary: true, safeRetry: true}
	}
	switch {
	case code >= 500:
		return replyVerdict{keepConn: true}
	case code == 421:
		// Service closing the transmission channel.
		return replyVerdict{temporary: true}
	case code >= 400:
		return replyVerdict{temporary: true, keepConn: true}
	default:
		// No reply: the connection broke or timed out.
		return replyVerdict{temporary: true, safeRetry: reason == mail.ErrSMTPMailFrom}
	}
}

// stages names the SMTP step of a go-mail failure.
var stages = map[mail.SendErrReason]string{
	mail.ErrGetSender:     "sender address",
	mail.ErrGetRcpts:      "recipient addresses",
	mail.ErrSMTPMailFrom:  "MAIL FROM",
	mail.ErrSMTPRcptTo:    "RCPT TO",
	mail.ErrSMTPData:      "DATA",
	mail.ErrSMTPDataClose: "end of DATA",
	mail.ErrSMTPReset:     "RSET",
	mail.ErrWriteContent:  "message content",
	mail.ErrConnCheck:     "connection check",
	mail.ErrNoUnencoded:   "8BITMIME",
}

// replyText digs the server's reply text out of a go-mail error
// ("sending SMTP RCPT TO command: 550 \"5.1.1 No such user\", affected …"),
// without the enhanced status code. Without a reply it returns the error
// text up to go-mail's list of affected recipients and message ID.
func replyText(s string, code int) string {
	if code != 0 {
		marker := strconv.Itoa(code) + " "
		if i := strings.Index(s, marker); i >= 0 {
			rest := s[i+len(marker):]
			if q, err := strconv.QuotedPrefix(rest); err == nil {
				if t, err := strconv.Unquote(q); err == nil {
					rest = t
				}
			} else if j := strings.Index(rest, ", affected "); j >= 0 {
				rest = rest[:j]
			}
			if f := strings.Fields(rest); len(f) > 1 && isEnhancedCode(f[0]) {
				rest = strings.Join(f[1:], " ")
			}
			return rest
		}
	}
	if j := strings.Index(s, ", affected "); j >= 0 {
		s = s[:j]
	}
	if _, after, ok := strings.Cut(s, " command: "); ok {
		s = after
	}
	return s
}

// isEnhancedCode reports an RFC 3463 status such as "4.2.0".
func isEnhancedCode(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || (parts[0] != "2" && parts[0] != "4" && parts[0] != "5") {
		return false
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// replyCode extracts an SMTP reply code from an error text ("535 5.7.8 …").
func replyCode(err error) int {
	if err == nil {
		return 0
	}
	s := err.Error()
	for i := 0; i+3 <= len(s); i++ {
		if (i == 0 || s[i-1] == ' ') && (s[i] == '4' || s[i] == '5') &&
			s[i+1] >= '0' && s[i+1] <= '9' && s[i+2] >= '0' && s[i+2] <= '9' &&
			(i+3 == len(s) || s[i+3] == ' ' || s[i+3] == '-') {
			n, _ := strconv.Atoi(s[i : i+3])
			return n
		}
	}
	return 0
}

// Causes of a failed send, as FailureCause names them (the cause label
// of feedmail_send_failures_total).
const (
	// CauseUnknownOutcome: the whole message was handed over and the
	// connection was lost, or timed out, before the server's reply to it
	// (RFC 5321's window for duplicates): the receiver may have it, and a
	// retry may deliver it twice.
	CauseUnknownOutcome = "unknown_outcome"
	CauseReply4xx       = "reply_4xx" // the server refused for now
	CauseReply5xx       = "reply_5xx" // the server refused
	CauseTimeout        = "timeout"   // no reply in time, before the message was handed over
	CauseNoReply        = "no_reply"  // the connection was lost before the message was handed over
	CauseConnect        = "connect"   // connecting, greeting, STARTTLS or authenticating failed
	CauseOther          = "other"     // not an SMTP failure (a Maildir write, a rate limit, a closed transport)
)

// FailureCause names what went wrong in err, a failed send of a
// Transport: a reply by its class, and a failure without one by where
// it happened, so that a message that may have arrived
// (CauseUnknownOutcome) is told apart from one that cannot have.
func FailureCause(err error) string {
	var se *SendError
	switch {
	case !errors.As(err, &se):
		return CauseOther
	case se.Stage == StageConnect:
		return CauseConnect
	case se.Code >= 500:
		return CauseReply5xx
	case se.Code >= 400:
		return CauseReply4xx
	case se.Code != 0:
		return CauseOther
	case se.Stage == stages[mail.ErrSMTPDataClose]:
		return CauseUnknownOutcome
	case errors.Is(se.Err, context.DeadlineExceeded) || errors.Is(se.Err, os.ErrDeadlineExceeded):
		return CauseTimeout
	case se.Stage == "":
		return CauseOther
	}
	return CauseNoReply
}
