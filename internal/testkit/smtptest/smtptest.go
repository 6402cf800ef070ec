// Package smtptest runs an in-process SMTP server on 127.0.0.1 for tests,
// benchmarks and the bench command. It records what it accepts and can be
// told to misbehave the ways real servers do: 421 and hang up after N
// messages in a session, 450 or 550 for chosen recipients, a connection
// dropped in the middle of DATA, a reply that never comes.
//
// It is built on github.com/emersion/go-smtp and sinks thousands of messages
// per second; set Options.Discard to keep counts only.
package smtptest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	netmail "net/mail"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Options configure a Server. Recipient lists match case-insensitively.
type Options struct {
	// Reply421After, when > 0, answers the MAIL command that follows this
	// many accepted messages in one session with "421 4.7.0" and closes the
	// connection (what servers limiting messages per connection do).
	Reply421After int
	// TempFail recipients get "450 4.2.0" at RCPT TO.
	TempFail []string
	// PermFail recipients get "550 5.1.1" at RCPT TO.
	PermFail []string
	// DropDuringData: for messages to these recipients the server reads the
	// start of the DATA and then closes the connection.
	DropDuringData []string
	// Stall: for messages to these recipients the server reads the whole
	// DATA and then never answers, until Close.
	Stall []string
	// Username and Password, when Username is set, require AUTH PLAIN
	// before MAIL.
	Username, Password string
	// TLS offers STARTTLS with a self-signed certificate for 127.0.0.1 and
	// localhost, made at Start; ClientTLSConfig trusts it.
	TLS bool
	// Discard keeps counts only, not the messages (for benchmarks).
	Discard bool
	// Logger receives the go-smtp server's error log at debug level.
	// Default: discard.
	Logger *slog.Logger
}

// Message is one accepted message.
type Message struct {
	From    string
	To      []string
	Raw     []byte
	Header  netmail.Header // parsed from Raw; nil if Raw has no valid header
	Session int            // 1-based number of the connection it came on
}

// Stats counts what the server saw.
type Stats struct {
	Sessions   int // connections accepted
	Accepted   int // messages accepted
	Rejected   int // 421 at MAIL plus 450/550 at RCPT
	TempFails  int // 450 at RCPT
	PermFails  int // 550 at RCPT
	Replied421 int
	Dropped    int // connections closed mid-DATA
	Stalled    int // DATA never answered
}

// Server is a running test SMTP server.
type Server struct {
	opts     Options
	ln       net.Listener
	srv      *smtp.Server
	done     chan struct{}
	closeMu  sync.Once
	clientTL *tls.Config

	tempFail, permFail, drop, stall map[string]bool

	sessions atomic.Int64

	connMu sync.Mutex
	conns  map[*faultConn]struct{}

	mu       sync.Mutex
	msgs     []Message
	stats    Stats
	changed  chan struct{} // closed and replaced whenever Accepted grows
	serveErr chan error
}

func lowerSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[strings.ToLower(strings.TrimSpace(s))] = true
	}
	return m
}

// Start listens on 127.0.0.1 on a free port and serves until Close.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("smtptest: listen: %w", err)
	}
	s := &Server{
		opts:     opts,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		serveErr: make(chan error, 1),
		tempFail: lowerSet(opts.TempFail),
		permFail: lowerSet(opts.PermFail),
		drop:     lowerSet(opts.DropDuringData),
		stall:    lowerSet(opts.Stall),
		conns:    make(map[*faultConn]struct{}),
	}
	s.ln = &listener{Listener: ln, s: s}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "smtptest.localhost"
	srv.MaxMessageBytes = 64 << 20
	srv.MaxRecipients = 100
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv.ErrorLog = slogAdapter{logger}
	if opts.TLS {
		cert, pool, err := selfSigned()
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.clientTL = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	s.srv = srv
	go func() { s.serveErr <- srv.Serve(s.ln) }()
	return s, nil
}

// Addr returns host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns an smtp:// URL for FEEDMAIL_SMTP_URL / mailer.ParseSMTPURL:
// tls=none, or tls=starttls with Options.TLS, with the credentials when
// Options.Username is set.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr()}
	if s.opts.Username != "" {
		u.User = url.UserPassword(s.opts.Username, s.opts.Password)
	}
	if s.opts.TLS {
		u.RawQuery = "tls=starttls"
	} else {
		u.RawQuery = "tls=none"
	}
	return u.String()
}

// ClientTLSConfig returns a TLS config that trusts the server's certificate
// (nil without Options.TLS).
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.clientTL == nil {
		return nil
	}
	return s.clientTL.Clone()
}

// Messages returns a copy of the accepted messages, in order of acceptance.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.msgs))
	copy(out, s.msgs)
	return out
}

// Count returns the number of accepted messages.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.Accepted
}

// Rejected returns the number of rejections (421 at MAIL, 450/550 at RCPT).
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.Rejected
}

// Sessions returns the number of connections accepted so far.
func (s *Server) Sessions() int { return int(s.sessions.Load()) }

// Stats returns all counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Sessions = s.Sessions()
	return st
}

// CloseConnections hangs up on every open connection without a word, as a
// server does with clients idle for too long. It returns how many it closed.
func (s *Server) CloseConnections() int {
	s.connMu.Lock()
	conns := make([]*faultConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.connMu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return len(conns)
}

// Reset forgets recorded messages and zeroes the message counters (not the
// session count).
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = nil
	s.stats = Stats{}
}

// WaitFor blocks until at least n messages were accepted, ctx ends (its
// error is returned) or the server is closed.
func (s *Server) WaitFor(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.stats.Accepted, s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("smtptest: %d of %d messages: %w", got, n, ctx.Err())
		case <-s.done:
			return fmt.Errorf("smtptest: closed with %d of %d messages", got, n)
		}
	}
}

// Close stops the server: stalled sessions are released, connections
// closed.
func (s *Server) Close() error {
	var err error
	s.closeMu.Do(func() {
		close(s.done)
		err = s.srv.Close()
		// Serve may not have registered the listener with go-smtp yet.
		if lerr := s.ln.Close(); lerr != nil && !errors.Is(lerr, net.ErrClosed) {
			err = errors.Join(err, lerr)
		}
		if serr := <-s.serveErr; serr != nil && !errors.Is(serr, smtp.ErrServerClosed) && !errors.Is(serr, net.ErrClosed) {
			err = errors.Join(err, serr)
		}
	})
	return err
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Server) accept(m Message) {
	if !s.opts.Discard {
		if msg, err := netmail.ReadMessage(bytes.NewReader(m.Raw)); err == nil {
			m.Header = msg.Header
		}
	}
	s.mu.Lock()
	if !s.opts.Discard {
		s.msgs = append(s.msgs, m)
	}
	s.stats.Accepted++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// listener wraps accepted connections so a reply can be followed by a
// hang-up, and counts sessions.
type listener struct {
	net.Listener
	s *Server
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	id := l.s.sessions.Add(1)
	fc := &faultConn{Conn: c, id: int(id), s: l.s}
	l.s.connMu.Lock()
	l.s.conns[fc] = struct{}{}
	l.s.connMu.Unlock()
	return fc, nil
}

// faultConn closes itself after the next write once hangUp is set, so that
// a 421 reply reaches the client before the connection drops.
type faultConn struct {
	net.Conn
	id     int
	s      *Server
	hangUp atomic.Bool
}

// Close closes the connection and forgets it.
func (c *faultConn) Close() error {
	c.s.connMu.Lock()
	delete(c.s.conns, c)
	c.s.connMu.Unlock()
	return c.Conn.Close()
}

func (c *faultConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.hangUp.Load() {
		_ = c.Close()
	}
	return n, err
}

// rawConn finds our faultConn under a go-smtp connection (which may have
// been upgraded to TLS).
func rawConn(c *smtp.Conn) *faultConn {
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	fc, _ := nc.(*faultConn)
	return fc
}

type session struct {
	s        *Server
	conn     *smtp.Conn
	fc       *faultConn
	authed   bool
	from     string
	to       []string
	accepted int
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: s, conn: c, fc: rawConn(c)}, nil
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.Username == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	if n := ss.s.opts.Reply421After; n > 0 && ss.accepted >= n {
		if ss.fc != nil {
			ss.fc.hangUp.Store(true)
		}
		ss.s.count(func(st *Stats) { st.Rejected++; st.Replied421++ })
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many messages in this session, closing connection"}
	}
	ss.from = from
	ss.to = ss.to[:0]
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	key := strings.ToLower(to)
	switch {
	case ss.s.tempFail[key]:
		ss.s.count(func(st *Stats) { st.Rejected++; st.TempFails++ })
		return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "Mailbox temporarily unavailable"}
	case ss.s.permFail[key]:
		ss.s.count(func(st *Stats) { st.Rejected++; st.PermFails++ })
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) anyRcpt(set map[string]bool) bool {
	for _, t := range ss.to {
		if set[strings.ToLower(t)] {
			return true
		}
	}
	return false
}

func (ss *session) Data(r io.Reader) error {
	if ss.anyRcpt(ss.s.drop) {
		buf := make([]byte, 64)
		_, _ = io.ReadFull(r, buf)
		ss.s.count(func(st *Stats) { st.Dropped++ })
		if ss.fc != nil {
			_ = ss.fc.Close()
		}
		return errors.New("connection dropped by smtptest")
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if ss.anyRcpt(ss.s.stall) {
		ss.s.count(func(st *Stats) { st.Stalled++ })
		<-ss.s.done
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Shutting down"}
	}
	to := make([]string, len(ss.to))
	copy(to, ss.to)
	m := Message{From: ss.from, To: to, Session: ss.sessionID()}
	if !ss.s.opts.Discard {
		m.Raw = raw
	}
	ss.s.accept(m)
	ss.accepted++
	return nil
}

func (ss *session) sessionID() int {
	if ss.fc != nil {
		return ss.fc.id
	}
	return 0
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = ss.to[:0]
}

func (ss *session) Logout() error { return nil }

// slogAdapter feeds go-smtp's error log to slog at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "smtptest")
}

func (a slogAdapter) Println(v ...any) {
	a.l.Debug(strings.TrimSuffix(fmt.Sprintln(v...), "\n"), "component", "smtptest")
}

// selfSigned makes a short-lived ECDSA certificate for 127.0.0.1 and
// localhost, and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("smtptest: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("smtptest: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("smtptest: certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("smtptest: certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
