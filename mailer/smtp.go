package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wneessen/go-mail"
	"golang.org/x/time/rate"
)

// WithTLSConfig sets the TLS configuration for starttls and tls (e.g. extra
// root CAs). ServerName defaults to the configured host.
func WithTLSConfig(c *tls.Config) Option {
	return func(o *options) { o.tlsConfig = c }
}

// WithLimiter replaces the token bucket built from SMTPConfig.Rate, e.g. to
// share one limit between transports or to inspect it in tests. Nil means
// unlimited.
func WithLimiter(l *rate.Limiter) Option {
	return func(o *options) { o.limiter = l }
}

// WithHELO sets the name sent in EHLO (default: this machine's host name).
func WithHELO(name string) Option {
	return func(o *options) { o.helo = name }
}

// WithIdleTimeouts sets when a pooled connection that sat idle is checked
// with NOOP before use (probe) and when it is closed and redialled instead
// (max). Defaults 10 s and 2 min: servers drop idle clients after a few
// minutes (RFC 5321 asks for at least 5).
func WithIdleTimeouts(probe, max time.Duration) Option {
	return func(o *options) {
		if probe > 0 {
			o.idleProbe = probe
		}
		if max > 0 {
			o.maxIdle = max
		}
	}
}

// SMTPStats counts what an SMTPTransport did.
type SMTPStats struct {
	Dials    uint64 // connections opened (greeting, EHLO, TLS and AUTH passed)
	Accepted uint64 // messages accepted by the server
	Failed   uint64 // messages that failed (temporary or permanent)
}

// SMTPTransport sends through an SMTP server (a relay or a provider) over a
// pool of persistent connections, each dialled once and redialled after a
// failure, with a token bucket limiting the message rate. It is safe for
// concurrent use. Replies are classified by classifyReply; a failure to
// connect, greet, STARTTLS or authenticate is temporary whatever its code
// (it says nothing about the message, so it must not count as a bounce),
// and a reused connection found dead before the server saw the message is
// redialled and the message tried once more.
type SMTPTransport struct {
	cfg     SMTPConfig
	opts    options
	limiter *rate.Limiter
	slots   chan *smtpConn
	all     []*smtpConn
	done    chan struct{}

	closeOnce sync.Once
	closeErr  error

	dials, accepted, failed atomic.Uint64
}

// NewSMTP returns a transport for cfg. It does not connect: connections are
// opened on first use. Zero fields of cfg take their defaults (see
// ParseSMTPURL).
func NewSMTP(cfg SMTPConfig, opts ...Option) *SMTPTransport {
	cfg = cfg.withDefaults()
	o := defaultOptions()
	if cfg.Rate > 0 {
		o.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), 1)
	}
	for _, opt := range opts {
		opt(&o)
	}
	t := &SMTPTransport{
		cfg:     cfg,
		opts:    o,
		limiter: o.limiter,
		slots:   make(chan *smtpConn, cfg.Pool),
		done:    make(chan struct{}),
	}
	for i := 0; i < cfg.Pool; i++ {
		c := &smtpConn{t: t, id: i}
		t.all = append(t.all, c)
		t.slots <- c
	}
	return t
}

// Config returns the effective configuration.
func (t *SMTPTransport) Config() SMTPConfig { return t.cfg }

// Stats returns counters since the transport was made.
func (t *SMTPTransport) Stats() SMTPStats {
	return SMTPStats{Dials: t.dials.Load(), Accepted: t.accepted.Load(), Failed: t.failed.Load()}
}

// Send delivers msgs over up to Pool connections in parallel and returns one
// result per message.
func (t *SMTPTransport) Send(ctx context.Context, msgs []*mail.Msg) []error {
	errs := make([]error, len(msgs))
	t.SendEach(ctx, msgs, func(i int, err error) { errs[i] = err })
	return errs
}

// SendEach delivers msgs over up to Pool connections in parallel and
// reports each result as its reply comes ([EachSender]); a connection
// takes its next message only after report returned.
func (t *SMTPTransport) SendEach(ctx context.Context, msgs []*mail.Msg, report func(i int, err error)) {
	if len(msgs) == 0 {
		return
	}
	var next atomic.Int64
	take := func() int { return int(next.Add(1) - 1) }
	workers := min(t.cfg.Pool, len(msgs))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			c, err := t.acquire(ctx)
			if err != nil {
				for i := take(); i < len(msgs); i = take() {
					report(i, err)
				}
				return
			}
			defer t.release(c)
			for i := take(); i < len(msgs); i = take() {
				err := t.sendOne(ctx, c, msgs[i])
				if err == nil {
					t.accepted.Add(1)
				} else {
					t.failed.Add(1)
				}
				report(i, err)
			}
		})
	}
	wg.Wait()
}

// acquire takes a connection slot from the pool.
func (t *SMTPTransport) acquire(ctx context.Context) (*smtpConn, error) {
	select {
	case <-t.done:
		return nil, temporary(ErrClosed, "smtp transport closed")
	default:
	}
	select {
	case c := <-t.slots:
		select {
		case <-t.done:
			t.slots <- c // Close is waiting for it
			return nil, temporary(ErrClosed, "smtp transport closed")
		default:
			return c, nil
		}
	case <-t.done:
		return nil, temporary(ErrClosed, "smtp transport closed")
	case <-ctx.Done():
		return nil, temporary(ctx.Err(), "waiting for an smtp connection: %v", ctx.Err())
	}
}

func (t *SMTPTransport) release(c *smtpConn) { t.slots <- c }

// Close waits for Sends in progress to finish with their connections, then
// says QUIT on each open connection. Sends after Close fail with a temporary
// ErrClosed.
func (t *SMTPTransport) Close() error {
	t.closeOnce.Do(func() {
		close(t.done)
		var errs []error
		for range t.cfg.Pool {
			c := <-t.slots
			if err := c.quit(); err != nil {
				errs = append(errs, err)
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// sendOne delivers one message on connection c.
func (t *SMTPTransport) sendOne(ctx context.Context, c *smtpConn, m *mail.Msg) error {
	if m == nil {
		return permanent(nil, "nil message")
	}
	if err := ctx.Err(); err != nil {
		return temporary(err, "not sent: %v", err)
	}
	if t.limiter != nil {
		if err := t.limiter.Wait(ctx); err != nil {
			return temporary(err, "not sent: rate limit: %v", err)
		}
	}
	for attempt := 0; ; attempt++ {
		fresh, err := c.ready(ctx)
		if err != nil {
			return err
		}
		serr, retry := c.deliver(ctx, m)
		if serr == nil {
			return nil
		}
		if retry && !fresh && attempt == 0 && ctx.Err() == nil {
			t.opts.logger.Debug("smtp: reused connection was dead, redialling", "conn", c.id, "err", serr)
			continue
		}
		return serr
	}
}
