package mailbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// Handler handles one message. raw is at most Config.MaxBytes; truncated
// says the message was larger. nil means handled or deliberately ignored:
// the reader moves the message out of the way. An error means a temporary
// failure (such as an unreachable database): the message stays, the reader
// stops this batch and tries again later, with backoff. The same message
// may be handed over more than once (see the package comment).
type Handler func(ctx context.Context, raw []byte, truncated bool) error

// Config says which mailbox to read and how.
type Config struct {
	URL        string        // imaps://user:pass@host[:port]/INBOX or imap://... (STARTTLS required)
	DoneFolder string        // where handled messages go; default "feedmail-done", created if missing
	MaxBytes   int64         // bytes fetched per message at most; default 10 MiB
	Poll       time.Duration // longest wait between passes (also while idling); default 1 min
	Backoff    time.Duration // first pause after a failure, doubling up to 5 min; default 1 s
	Batch      int           // messages per logged batch; default 100
	TLS        *tls.Config   // nil: system roots, checked against the URL's host
	Logger     *slog.Logger
	Clock      clock.Clock // for the durations in the logs; default clock.Real
}

// Defaults.
const (
	DefaultDoneFolder = "feedmail-done"
	DefaultMaxBytes   = 10 << 20
	maxBackoff        = 5 * time.Minute
)

// Reader reads one mailbox. Build it with New.
type Reader struct {
	cfg    Config
	target Target
	h      Handler
	log    *slog.Logger
}

// New checks cfg, fills its defaults and returns a Reader that hands
// messages to h. It does not connect.
func New(cfg Config, h Handler) (*Reader, error) {
	if h == nil {
		return nil, errors.New("mailbox: nil handler")
	}
	t, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	if cfg.DoneFolder == "" {
		cfg.DoneFolder = DefaultDoneFolder
	}
	if cfg.DoneFolder == t.Mailbox {
		return nil, fmt.Errorf("mailbox: done folder %q is the mailbox being read", cfg.DoneFolder)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Minute
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("mailbox", t.String())
	return &Reader{cfg: cfg, target: t, h: h, log: log}, nil
}

// Run reads the mailbox until ctx ends, then returns nil: it connects,
// handles every message, waits for more (IDLE when the server has it, else
// a poll) and, after any failure (connection, server, handler error),
// pauses with a doubling backoff and connects again.
func (r *Reader) Run(ctx context.Context) error {
	pause := r.cfg.Backoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for ctx.Err() == nil {
		progressed, err := r.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var wait time.Duration
		wait, pause = nextPause(err, progressed, pause, r.cfg.Backoff)
		if errors.Is(err, ErrLoginRefused) {
			r.log.Error("mailbox: the server refused the login; check the user and password in the mailbox URL",
				"err", err, "pause", wait)
		} else {
			r.log.Warn("mailbox session ended; reconnecting", "err", err, "pause", wait)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
	return nil
}

// nextPause returns how long to wait after a session that ended with err,
// and the pause to use after the next failure. A session that got
// somewhere starts again from first; others double up to maxBackoff. A
// refused login waits the longest at once: a wrong password is not fixed
// by asking again, and servers lock out (or ban the address of) clients
// that keep trying.
func nextPause(err error, progressed bool, pause, first time.Duration) (wait, next time.Duration) {
	if progressed {
		pause = first
	}
	if errors.Is(err, ErrLoginRefused) {
		pause = maxBackoff
	}
	return pause, min(2*pause, maxBackoff)
}

// session connects and alternates passes and waits until something fails.
// It reports whether it got anywhere (a message handled or a pass
// completed), so Run can reset its backoff, and the error that ended it.
func (r *Reader) session(ctx context.Context) (progressed bool, err error) {
	s, err := r.connect(ctx)
	if err != nil {
		return false, err
	}
	defer s.close()
	for {
		n, err := r.pass(ctx, s)
		if err != nil {
			return progressed || n > 0, err
		}
		progressed = true
		if err := s.wait(ctx, r.cfg.Poll); err != nil {
			return progressed, err
		}
		if ctx.Err() != nil {
			return progressed, ctx.Err()
		}
	}
}

// RunOnce connects, makes one pass over the mailbox and logs out. It
// returns how many messages the handler accepted (and were moved), and the
// first error: connecting, the server, or the handler's.
func (r *Reader) RunOnce(ctx context.Context) (handled int, err error) {
	s, err := r.connect(ctx)
	if err != nil {
		return 0, err
	}
	defer s.close()
	return r.pass(ctx, s)
}
