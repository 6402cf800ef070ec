package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/wneessen/go-mail"
	gmsmtp "github.com/wneessen/go-mail/smtp"
)

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
		se.Code, se.Stage = replyCode(err), StageConnect
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
		se := temporary(ctx.Err(), "smtp: %v (after %v)", ctx.Err(), err)
		var mse *mail.SendError
		if errors.As(err, &mse) {
			se.Stage = stages[mse.Reason] // where it stood: end of DATA means the message was handed over
		}
		return se, false
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
