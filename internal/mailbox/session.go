package mailbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// connectTimeout bounds the TCP connection and the TLS handshake; the
// IMAP client bounds each response by itself.
const connectTimeout = 30 * time.Second

// ErrLoginRefused: the server answered the login with a refusal (a wrong
// user or password, a disabled account), which retrying soon will not fix.
var ErrLoginRefused = errors.New("the server refused the login")

// session is one logged-in connection with the mailbox selected.
type session struct {
	c    *imapclient.Client
	wake chan struct{} // a new message was announced (EXISTS)
	stop func() bool   // stops closing the connection when ctx ends
}

// connect dials the server (implicit TLS or STARTTLS, never plain text),
// logs in, creates the done folder when missing and selects the mailbox.
// The connection is closed as soon as ctx ends, so no call blocks past it.
func (r *Reader) connect(ctx context.Context) (*session, error) {
	t := r.target
	d := net.Dialer{Timeout: connectTimeout}
	conn, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("mailbox: dial %s: %w", t.Addr, err)
	}
	tc := &tls.Config{}
	if r.cfg.TLS != nil {
		tc = r.cfg.TLS.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = t.Host
	}
	s := &session{wake: make(chan struct{}, 1)}
	opts := &imapclient.Options{
		TLSConfig: tc,
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(m *imapclient.UnilateralDataMailbox) {
				if m.NumMessages != nil {
					select {
					case s.wake <- struct{}{}:
					default:
					}
				}
			},
		},
	}
	if t.ImplicitTLS {
		tconn := tls.Client(conn, tc)
		hctx, cancel := context.WithTimeout(ctx, connectTimeout)
		err := tconn.HandshakeContext(hctx)
		cancel()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("mailbox: TLS with %s: %w", t.Addr, err)
		}
		s.c = imapclient.New(tconn, opts)
	} else {
		stopDial := context.AfterFunc(ctx, func() { conn.Close() })
		s.c, err = imapclient.NewStartTLS(conn, opts)
		stopDial()
		if err != nil {
			return nil, fmt.Errorf("mailbox: STARTTLS with %s: %w", t.Addr, err)
		}
	}
	s.stop = context.AfterFunc(ctx, func() { s.c.Close() })
	if err := r.open(s.c); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// open logs in, makes sure the done folder exists and selects the mailbox.
func (r *Reader) open(c *imapclient.Client) error {
	t := r.target
	if err := c.Login(t.User, t.Password).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) {
			return fmt.Errorf("mailbox: login as %q: %w: %w", t.User, ErrLoginRefused, err)
		}
		return fmt.Errorf("mailbox: login as %q: %w", t.User, err)
	}
	list, err := c.List("", r.cfg.DoneFolder, nil).Collect()
	if err != nil {
		return fmt.Errorf("mailbox: list %q: %w", r.cfg.DoneFolder, err)
	}
	if len(list) == 0 {
		if err := c.Create(r.cfg.DoneFolder, nil).Wait(); err != nil && !alreadyExists(err) {
			return fmt.Errorf("mailbox: create %q: %w", r.cfg.DoneFolder, err)
		}
		r.log.Info("mailbox: created the done folder", "folder", r.cfg.DoneFolder)
	}
	if _, err := c.Select(t.Mailbox, nil).Wait(); err != nil {
		return fmt.Errorf("mailbox: select %q: %w", t.Mailbox, err)
	}
	return nil
}

// alreadyExists reports whether err is the server saying the folder exists
// (another reader created it between LIST and CREATE).
func alreadyExists(err error) bool {
	var ie *imap.Error
	return errors.As(err, &ie) && ie.Code == imap.ResponseCodeAlreadyExists
}

// wait returns when a new message may have arrived: the server announced
// one while idling (IDLE when it has it), poll passed, or ctx ended. An
// error means the connection is no longer usable.
func (s *session) wait(ctx context.Context, poll time.Duration) error {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	if !s.c.Caps().Has(imap.CapIdle) {
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-s.c.Closed():
			return errors.New("mailbox: connection closed")
		}
		return nil
	}
	idle, err := s.c.Idle()
	if err != nil {
		return fmt.Errorf("mailbox: IDLE: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-timer.C:
	case <-s.wake:
	case <-s.c.Closed():
	}
	if err := idle.Close(); err != nil {
		return fmt.Errorf("mailbox: end IDLE: %w", err)
	}
	if err := idle.Wait(); err != nil {
		return fmt.Errorf("mailbox: IDLE: %w", err)
	}
	return nil
}

// close logs out (briefly) and closes the connection.
func (s *session) close() {
	s.stop()
	done := make(chan struct{})
	go func() {
		s.c.Logout().Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	s.c.Close()
}
