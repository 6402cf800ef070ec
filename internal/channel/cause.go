package channel

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// FailureCause names what went wrong in a failed delivery err, with the
// words of mailer.FailureCause (the cause label of
// feedmail_send_failures_total): reply_5xx or reply_4xx for an answer,
// timeout when none came in time, no_reply when the connection failed
// before an answer (refused, reset, closed early), other for the rest (a
// target refused before sending, a request that could not be made).
func FailureCause(err error) string {
	var he *HTTPError
	var ne net.Error
	switch {
	case errors.As(err, &he) && he.Status >= 500:
		return "reply_5xx"
	case he != nil:
		return "reply_4xx"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE), errors.As(err, new(*net.OpError)):
		return "no_reply"
	}
	return "other"
}
