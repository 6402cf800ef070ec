package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wneessen/go-mail"
	gmsmtp "github.com/wneessen/go-mail/smtp"
	"golang.org/x/time/rate"
)

// TLSMode is how an SMTP connection is secured.
type TLSMode string

const (
	// TLSStartTLS connects in plain text and requires STARTTLS before
	// anything else (default; port 587).
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit speaks TLS from the first byte (port 465, "smtps").
	TLSImplicit TLSMode = "tls"
	// TLSNone never encrypts (port 25; for a local relay or tests).
	TLSNone TLSMode = "none"
)

// Limits on SMTP URL parameters.
const (
	defaultSMTPPool    = 4
	maxSMTPPool        = 64
	defaultSMTPTimeout = 30 * time.Second
)

// SMTPConfig is where and how to send mail over SMTP.
type SMTPConfig struct {
	Host     string
	Port     int
	Username string
	Password string
	TLS      TLSMode
	// Pool is the number of persistent connections (default 4).
	Pool int
	// Rate is the most messages per second over all connections; 0 means
	// unlimited. The token bucket holds one token (no bursts), so the
	// limit holds over any window.
	Rate float64
	// Timeout bounds dialing plus the greeting, and then each message
	// (default 30 s). A context deadline applies on top.
	Timeout time.Duration
}

// String describes the config without the password.
func (c SMTPConfig) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	if c.Username != "" {
		u.User = url.User(c.Username)
	}
	q := url.Values{}
	q.Set("tls", string(c.TLS))
	if c.Pool != 0 {
		q.Set("pool", strconv.Itoa(c.Pool))
	}
	if c.Rate != 0 {
		q.Set("rate", strconv.FormatFloat(c.Rate, 'g', -1, 64))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ParseSMTPURL parses FEEDMAIL_SMTP_URL:
//
//	smtp://user:pass@host:port?tls=starttls|tls|none&pool=N&rate=R&timeout=D
//
// tls defaults to starttls ("smtps://" means tls); the port defaults to 587
// for starttls, 465 for tls and 25 for none; pool defaults to 4 (1–64); rate
// is messages per second (a positive number, fractions allowed; absent =
// unlimited); timeout is a Go duration (default 30s). User and password are
// URL-decoded, so "%40" in a user name is "@". Unknown parameters are
// errors, so a typo cannot silently turn TLS off. With a user name the
// transport authenticates with PLAIN, LOGIN or CRAM-MD5, whichever the
// server offers first in that order; PLAIN and LOGIN are refused over
// tls=none unless the server is on loopback.
func ParseSMTPURL(s string) (SMTPConfig, error) {
	var cfg SMTPConfig
	s = strings.TrimSpace(s)
	if s == "" {
		return cfg, errors.New("smtp url: empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return cfg, fmt.Errorf("smtp url: %w", redactURLError(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "smtp":
		cfg.TLS = TLSStartTLS
	case "smtps":
		cfg.TLS = TLSImplicit
	case "":
		return cfg, errors.New("smtp url: missing scheme, want smtp://host:port")
	default:
		return cfg, fmt.Errorf("smtp url: scheme %q not supported, want smtp or smtps", u.Scheme)
	}
	if u.Opaque != "" {
		return cfg, errors.New("smtp url: want smtp://host:port (missing //)")
	}
	if u.Path != "" && u.Path != "/" {
		return cfg, fmt.Errorf("smtp url: unexpected path %q", u.Path)
	}
	cfg.Host = u.Hostname()
	if cfg.Host == "" {
		return cfg, errors.New("smtp url: missing host")
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return cfg, fmt.Errorf("smtp url: query: %w", err)
	}
	for key, vals := range q {
		if len(vals) != 1 {
			return cfg, fmt.Errorf("smtp url: parameter %q given %d times", key, len(vals))
		}
		v := strings.TrimSpace(vals[0])
		switch key {
		case "tls":
			mode := TLSMode(strings.ToLower(v))
			switch mode {
			case TLSStartTLS, TLSImplicit, TLSNone:
			default:
				return cfg, fmt.Errorf("smtp url: tls=%q, want starttls, tls or none", v)
			}
			if strings.EqualFold(u.Scheme, "smtps") && mode != TLSImplicit {
				return cfg, fmt.Errorf("smtp url: smtps:// contradicts tls=%s", v)
			}
			cfg.TLS = mode
		case "pool":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxSMTPPool {
				return cfg, fmt.Errorf("smtp url: pool=%q, want a whole number from 1 to %d", v, maxSMTPPool)
			}
			cfg.Pool = n
		case "rate":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r > 0) || r > 1e6 {
				return cfg, fmt.Errorf("smtp url: rate=%q, want messages per second > 0", v)
			}
			cfg.Rate = r
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return cfg, fmt.Errorf("smtp url: timeout=%q, want a duration such as 30s", v)
			}
			cfg.Timeout = d
		default:
			return cfg, fmt.Errorf("smtp url: unknown parameter %q (known: tls, pool, rate, timeout)", key)
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("smtp url: port %q out of range", p)
		}
		cfg.Port = n
	}
	cfg = cfg.withDefaults()
	return cfg, nil
}

// redactURLError keeps a password out of url.Parse errors, which quote the
// whole input.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s", ue.Err)
	}
	return err
}

// withDefaults fills the zero fields.
func (c SMTPConfig) withDefaults() SMTPConfig {
	if c.TLS == "" {
		c.TLS = TLSStartTLS
	}
	if c.Port == 0 {
		switch c.TLS {
		case TLSImplicit:
			c.Port = 465
		case TLSNone:
			c.Port = 25
		default:
			c.Port = 587
		}
	}
	if c.Pool <= 0 {
		c.Pool = defaultSMTPPool
	}
	if c.Pool > maxSMTPPool {
		c.Pool = maxSMTPPool
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultSMTPTimeout
	}
	return c
}

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
// pool of persistent connections: each connection is dialled once, sends
// many messages (RSET between them) and is redialled after a failure. A token
// bucket (golang.org/x/time/rate) limits the message rate. It is safe for
// concurrent use; concurrent Sends share the pool.
//
// Failure policy: SMTP 4xx is temporary and 5xx permanent for the message
// concerned; a failure to connect, greet, STARTTLS or authenticate is
// temporary whatever its code, because it says nothing about the message
// (a 5xx there must not mark an address as bouncing). A connection that was
// reused and turns out dead before the server saw anything of the message
// (NOOP probe or MAIL FROM fails without a reply) is redialled and the
// message tried once more; every other failure is reported, and a failure
// after the message data was sent may mean the server got it anyway (a
// retry can then duplicate, which Message-ID de-duplication at the receiver
// absorbs).
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
	if len(msgs) == 0 {
		return errs
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
					errs[i] = err
				}
				return
			}
			defer t.release(c)
			for i := take(); i < len(msgs); i = take() {
				errs[i] = t.sendOne(ctx, c, msgs[i])
				if errs[i] == nil {
					t.accepted.Add(1)
				} else {
					t.failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return errs
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

// smtpConn is one slot of the pool: a go-mail client and, once dialled, its
// SMTP session. Only the goroutine holding the slot uses it.
type smtpConn struct {
	t  *SMTPTransport
	id int
	mc *mail.Client
	sc *gmsmtp.Client

	mu  sync.Mutex
	raw net.Conn // the socket, closed to abort a blocked command

	lastUsed time.Time
}

func (c *smtpConn) setRaw(conn net.Conn) {
	c.mu.Lock()
	c.raw = conn
	c.mu.Unlock()
}

// abort closes the socket under a blocked command (context ended).
func (c *smtpConn) abort() {
	c.mu.Lock()
	if c.raw != nil {
		_ = c.raw.Close()
	}
	c.mu.Unlock()
}

// drop forgets the session after a failure; the next message redials.
func (c *smtpConn) drop() {
	c.abort()
	c.setRaw(nil)
	c.sc = nil
}

// quit ends the session politely.
func (c *smtpConn) quit() error {
	if c.sc == nil {
		return nil
	}
	sc := c.sc
	c.sc = nil
	_ = sc.UpdateDeadline(min(c.t.cfg.Timeout, 5*time.Second))
	err := sc.Quit()
	c.abort()
	c.setRaw(nil)
	if err != nil && !isConnGone(err) {
		return fmt.Errorf("smtp quit: %w", err)
	}
	return nil
}

// isConnGone reports errors of a connection that is already closed.
func isConnGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed") ||
		strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "broken pipe")
}

// client builds the go-mail client for this slot (once).
func (c *smtpConn) client() (*mail.Client, error) {
	if c.mc != nil {
		return c.mc, nil
	}
	t := c.t
	cfg := t.cfg
	var tlsConf *tls.Config
	if t.opts.tlsConfig != nil {
		tlsConf = t.opts.tlsConfig.Clone()
	} else {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = cfg.Host
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		var err error
		if cfg.TLS == TLSImplicit {
			td := &tls.Dialer{NetDialer: dialer, Config: tlsConf}
			conn, err = td.DialContext(ctx, network, addr)
		} else {
			conn, err = dialer.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		c.setRaw(conn)
		return conn, nil
	}
	opts := []mail.Option{
		mail.WithPort(cfg.Port),
		mail.WithTimeout(cfg.Timeout),
		mail.WithDialContextFunc(dial),
		mail.WithTLSConfig(tlsConf),
		mail.WithoutNoop(), // probing is done here, only for idle connections
	}
	switch cfg.TLS {
	case TLSStartTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default: // implicit TLS is done by the dialer; none is none
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	}
	if cfg.Username != "" {
		opts = append(opts, mail.WithSMTPAuthCustom(&autoAuth{user: cfg.Username, pass: cfg.Password, host: cfg.Host}))
	}
	if t.opts.helo != "" {
		opts = append(opts, mail.WithHELO(t.opts.helo))
	}
	mc, err := mail.NewClient(cfg.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp client: %w", err)
	}
	c.mc = mc
	return mc, nil
}

// ready makes sure the slot has a live session: it closes one idle for too
// long, probes one idle for a while with NOOP, and dials when there is none.
// fresh reports a session dialled just now.
func (c *smtpConn) ready(ctx context.Context) (fresh bool, err error) {
	now := c.t.opts.clock.Now()
	if c.sc != nil {
		idle := now.Sub(c.lastUsed)
		switch {
		case idle >= c.t.opts.maxIdle:
			_ = c.quit()
		case idle >= c.t.opts.idleProbe:
			stop := context.AfterFunc(ctx, c.abort)
			perr := c.sc.UpdateDeadline(c.t.cfg.Timeout)
			if perr == nil {
				perr = c.sc.Noop()
			}
			stop()
			if perr != nil {
				c.drop()
			}
		}
	}
	if c.sc != nil {
		return false, nil
	}
	mc, err := c.client()
	if err != nil {
		return false, temporary(err, "smtp: %v", err)
	}
	stop := context.AfterFunc(ctx, c.abort)
	sc, err := mc.DialToSMTPClientWithContext(ctx)
	aborted := !stop()
	if err != nil || aborted {
		c.drop()
		if aborted || ctx.Err() != nil {
			return false, temporary(ctx.Err(), "smtp connect to %s:%d: %v", c.t.cfg.Host, c.t.cfg.Port, ctx.Err())
		}
		se := temporary(err, "%s:%d: %v", c.t.cfg.Host, c.t.cfg.Port, err)
		se.Code, se.Stage = replyCode(err), "connect"
		return false, se
	}
	c.sc = sc
	c.lastUsed = now
	c.t.dials.Add(1)
	return true, nil
}

// deliver sends m on the live session. retry reports a failure where the
// server cannot have seen the message and the connection was found dead, so
// sending again on a new connection is safe.
func (c *smtpConn) deliver(ctx context.Context, m *mail.Msg) (serr *SendError, retry bool) {
	stop := context.AfterFunc(ctx, c.abort)
	err := c.mc.SendWithSMTPClient(c.sc, m)
	aborted := !stop()
	c.lastUsed = c.t.opts.clock.Now()
	if err == nil && !aborted {
		return nil, false
	}
	if aborted {
		c.drop()
		if m.IsDelivered() {
			return nil, false
		}
		if err == nil {
			err = ctx.Err()
		}
		return temporary(ctx.Err(), "smtp: %v (after %v)", ctx.Err(), err), false
	}
	serr, keep, retry := classifySMTP(err, m)
	if serr != nil && keep {
		// The transaction may still be open on the server (e.g. DATA
		// refused): reset it, or give up on the connection.
		if rerr := c.sc.Reset(); rerr != nil {
			keep = false
		}
	}
	if !keep {
		c.drop()
	}
	return serr, retry
}

// classifySMTP turns a go-mail send error into a SendError (nil when the
// message was in fact delivered), whether the connection can be kept, and
// whether a retry on a new connection is safe.
func classifySMTP(err error, m *mail.Msg) (serr *SendError, keepConn, safeRetry bool) {
	var mse *mail.SendError
	if !errors.As(err, &mse) {
		return temporary(err, "smtp: %v", err), false, false
	}
	code := mse.ErrorCode()
	se := &SendError{Code: code, EnhancedCode: mse.EnhancedStatusCode(), Msg: replyText(mse.Error(), code),
		Stage: stages[mse.Reason], Err: err}
	switch mse.Reason {
	case mail.ErrGetSender, mail.ErrGetRcpts, mail.ErrNoUnencoded:
		// The message itself cannot be sent (bad address, 8-bit body).
		se.Temporary = false
		return se, true, false
	case mail.ErrSMTPReset:
		if m.IsDelivered() {
			// Accepted; only the RSET after it failed.
			return nil, false, false
		}
	case mail.ErrConnCheck:
		se.Temporary = true
		return se, false, true
	}
	switch {
	case code >= 500:
		se.Temporary = false
		return se, true, false
	case code == 421:
		// Service closing the transmission channel.
		se.Temporary = true
		return se, false, false
	case code >= 400:
		se.Temporary = true
		return se, true, false
	default:
		// No reply: the connection broke or timed out.
		se.Temporary = true
		return se, false, mse.Reason == mail.ErrSMTPMailFrom
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

// autoAuth picks the SMTP AUTH mechanism from what the server offers:
// PLAIN, else LOGIN, else CRAM-MD5. PLAIN and LOGIN refuse to send the
// password over a connection without TLS unless the server is on loopback
// (go-mail's rule).
type autoAuth struct {
	user, pass, host string
	delegate         gmsmtp.Auth
}

func (a *autoAuth) Start(server *gmsmtp.ServerInfo) (string, []byte, error) {
	has := func(mech string) bool {
		for _, m := range server.Auth {
			if strings.EqualFold(m, mech) {
				return true
			}
		}
		return false
	}
	switch {
	case has("PLAIN"):
		a.delegate = gmsmtp.PlainAuth("", a.user, a.pass, a.host, false)
	case has("LOGIN"):
		a.delegate = gmsmtp.LoginAuth(a.user, a.pass, a.host, false)
	case has("CRAM-MD5"):
		a.delegate = gmsmtp.CRAMMD5Auth(a.user, a.pass)
	default:
		return "", nil, fmt.Errorf("smtp auth: server offers %v, none of PLAIN, LOGIN, CRAM-MD5", server.Auth)
	}
	return a.delegate.Start(server)
}

func (a *autoAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if a.delegate == nil {
		return nil, errors.New("smtp auth: not started")
	}
	return a.delegate.Next(fromServer, more)
}
