package postfixtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/emersion/go-smtp"
)

// defaultReject is what the dead domain's server answers at RCPT for an
// address RejectWith does not name: the reply of a server that knows no
// such user.
var defaultReject = &smtp.SMTPError{
	Code:         550,
	EnhancedCode: smtp.EnhancedCode{5, 1, 1},
	Message:      "Recipient address rejected: User unknown in local recipient table",
}

// remote is the dead domain's mail server: it answers RCPT from a table,
// accepts the messages whose recipients all got a 2xx, and keeps nothing
// but their count.
type remote struct {
	ln      net.Listener
	srv     *smtp.Server
	replies map[string]*smtp.SMTPError // nil value: accept
	served  chan error

	mu       sync.Mutex
	accepted int
}

// startRemote listens on a free loopback port and serves until close.
func startRemote(replies map[string]*smtp.SMTPError) (*remote, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("postfixtest: listen: %w", err)
	}
	r := &remote{ln: ln, replies: replies, served: make(chan error, 1)}
	r.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &remoteSession{r: r}, nil
	}))
	r.srv.Domain = "mx.dead.postfixtest.localhost"
	r.srv.AllowInsecureAuth = true
	r.srv.MaxRecipients = 100
	r.srv.MaxMessageBytes = 32 << 20
	go func() { r.served <- r.srv.Serve(ln) }()
	return r, nil
}

func (r *remote) addr() string { return r.ln.Addr().String() }

// reply returns the RCPT answer for an address: nil to accept.
func (r *remote) reply(addr string) *smtp.SMTPError {
	if e, ok := r.replies[strings.ToLower(addr)]; ok {
		return e
	}
	return defaultReject
}

// count returns how many messages the server accepted.
func (r *remote) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}

// close stops serving and returns Serve's error, if any was unexpected.
func (r *remote) close() error {
	err := r.srv.Close()
	// Serve may not have registered the listener with go-smtp yet.
	if lerr := r.ln.Close(); lerr != nil && !errors.Is(lerr, net.ErrClosed) {
		err = errors.Join(err, lerr)
	}
	if serr := <-r.served; serr != nil && !errors.Is(serr, smtp.ErrServerClosed) && !errors.Is(serr, net.ErrClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

type remoteSession struct{ r *remote }

func (s *remoteSession) Mail(string, *smtp.MailOptions) error { return nil }

func (s *remoteSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if e := s.r.reply(to); e != nil {
		return e
	}
	return nil
}

func (s *remoteSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.accepted++
	s.r.mu.Unlock()
	return nil
}

func (s *remoteSession) Reset()        {}
func (s *remoteSession) Logout() error { return nil }
