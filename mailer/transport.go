package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/wneessen/go-mail"
	"golang.org/x/time/rate"
)

// Transport delivers messages. Send returns one result per message, in
// order: nil means the message was accepted (by the SMTP server, or written
// to the Maildir). A non-nil result satisfies errors.Is(err, ErrTemporary)
// (retry later) or errors.Is(err, ErrPermanent) (give up), and errors.As
// finds a *SendError with the details. Send honours ctx: when it ends,
// messages not yet accepted come back as temporary failures.
type Transport interface {
	Send(ctx context.Context, msgs []*mail.Msg) []error
	Close() error
}

// EachSender is a Transport that reports each message's result as soon as
// it is known (an SMTP server's reply), not all at the end: a caller can
// record an acceptance while the rest is still on the wire. report gets
// the message's index and its result as Send would give it; it may be
// called from several goroutines at once, and may block: the connection
// that delivered the message hands no further message over until it
// returns (a caller's back-pressure). SendEach returns after the last
// report.
type EachSender interface {
	SendEach(ctx context.Context, msgs []*mail.Msg, report func(i int, err error))
}

// SendEach delivers msgs by t and reports each result: as it comes when t
// is an [EachSender], otherwise in order once t.Send returns.
func SendEach(ctx context.Context, t Transport, msgs []*mail.Msg, report func(i int, err error)) {
	if e, ok := t.(EachSender); ok {
		e.SendEach(ctx, msgs, report)
		return
	}
	for i, err := range t.Send(ctx, msgs) {
		report(i, err)
	}
}

var (
	// ErrTemporary classifies a failure worth retrying: SMTP 4xx, a dropped
	// connection, a timeout or cancelled context, a full disk, a rate limit
	// that would outlast the context.
	ErrTemporary = errors.New("temporary delivery failure")
	// ErrPermanent classifies a failure not worth retrying: SMTP 5xx for
	// this message or recipient, or a message that cannot be sent at all.
	ErrPermanent = errors.New("permanent delivery failure")
	// ErrClosed is the cause of failures of Send on a closed transport
	// (temporary: another process or a restart can send the message).
	ErrClosed = errors.New("transport closed")
)

// SendError is the failure of one message.
type SendError struct {
	// Code is the SMTP reply code (e.g. 450, 550), 0 when the failure was
	// not an SMTP reply (network, timeout, disk).
	Code int
	// EnhancedCode is the RFC 3463 status ("5.1.1") when the server sent one.
	EnhancedCode string
	// Msg is the server's reply text (without codes) or a description of
	// the failure.
	Msg string
	// Stage is the SMTP step that failed ("connect", "MAIL FROM",
	// "RCPT TO", "DATA", "end of DATA", …); empty outside SMTP.
	Stage string
	// Temporary tells whether a retry may succeed.
	Temporary bool
	// Err is the underlying error, if any (e.g. context.DeadlineExceeded,
	// syscall.ENOSPC).
	Err error
}

// StageConnect is the SendError stage of failures to connect, greet,
// STARTTLS or authenticate: they are about the relay, not the message.
const StageConnect = "connect"

// Error describes the failure, e.g.
// "smtp 550 5.1.1 at RCPT TO: No such user here (permanent)".
func (e *SendError) Error() string {
	kind := "permanent"
	if e.Temporary {
		kind = "temporary"
	}
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	at := ""
	if e.Stage != "" {
		at = " at " + e.Stage
	}
	switch {
	case e.Code != 0 && e.EnhancedCode != "":
		return fmt.Sprintf("smtp %d %s%s: %s (%s)", e.Code, e.EnhancedCode, at, msg, kind)
	case e.Code != 0:
		return fmt.Sprintf("smtp %d%s: %s (%s)", e.Code, at, msg, kind)
	case e.Stage != "":
		return fmt.Sprintf("smtp%s: %s (%s)", at, msg, kind)
	default:
		return fmt.Sprintf("%s (%s)", msg, kind)
	}
}

// Is makes errors.Is(err, ErrTemporary) and errors.Is(err, ErrPermanent)
// work.
func (e *SendError) Is(target error) bool {
	switch target {
	case ErrTemporary:
		return e.Temporary
	case ErrPermanent:
		return !e.Temporary
	}
	return false
}

// Unwrap returns the underlying error.
func (e *SendError) Unwrap() error { return e.Err }

// temporary and permanent build SendErrors that are not SMTP replies.
func temporary(err error, format string, args ...any) *SendError {
	return &SendError{Temporary: true, Msg: fmt.Sprintf(format, args...), Err: err}
}

func permanent(err error, format string, args ...any) *SendError {
	return &SendError{Temporary: false, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Option configures a transport. Options that do not apply to a transport
// are ignored by it.
type Option func(*options)

type options struct {
	clock     clock.Clock
	logger    *slog.Logger
	limiter   *rate.Limiter
	tlsConfig *tls.Config
	helo      string
	idleProbe time.Duration
	maxIdle   time.Duration
	writeFile func(path string, data []byte) error
	hostname  string
}

func defaultOptions() options {
	return options{
		clock:     clock.Real{},
		logger:    slog.New(slog.DiscardHandler),
		idleProbe: 10 * time.Second,
		maxIdle:   2 * time.Minute,
	}
}

// WithClock sets the clock (SMTP: idle-connection bookkeeping; Maildir: file
// names). Default clock.Real.
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}
