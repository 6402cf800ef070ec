// Package smtptest runs an in-process SMTP server on 127.0.0.1 for tests,
// benchmarks and the bench command. It records what it accepts and can be
// told to misbehave the ways real servers do: 421 and hang up after N
// messages in a session, 450 or 550 for chosen recipients, any reply a
// test chooses per recipient (a blocklisting), a connection dropped in the
// middle of DATA, a reply that never comes; and at random, from a seed,
// a hang-up after the final dot, a 451 or a slow reply (Options.Faults),
// with every message taken in full handed to Options.Observe.
//
// It is built on github.com/emersion/go-smtp and sinks thousands of messages
// per second; set Options.Discard to keep counts only.
//
// Test infrastructure: never linked into cmd/feedmail.
// It delivers nothing anywhere: accepted messages stay in memory.
package smtptest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// RcptReply, when set, is asked at each RCPT TO that TempFail and
	// PermFail let through: a non-nil Reply refuses the recipient with
	// it (a blocklisting of one domain, a rate limit). It may change its
	// answer while the server runs (a block that lifts); it must be safe
	// for concurrent use.
	RcptReply func(rcpt string) *Reply
	// DropDuringData: for messages to these recipients the server reads the
	// start of the DATA and then closes the connection.
	DropDuringData []string
	// DropAfterData: for messages to these recipients the server reads
	// the whole DATA, keeps the message (it was handed over) and closes the
	// connection before its reply: the client cannot know it arrived.
	DropAfterData []string
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
	// BeforeAccept, when set, runs after a message's DATA is read and
	// before the server answers 250: a test does there what must happen
	// while the client waits for the acceptance (a database restart, say).
	BeforeAccept func()
	// Faults make the server drop, refuse or delay messages at random,
	// reproducibly from their seed (see Faults).
	Faults Faults
	// Observe, when set, is called for every message taken in full:
	// accepted, or dropped after the dot (Received.DroppedAfterDot), also
	// with Discard. Messages refused with 451 are not received. It runs
	// before the reply is sent, on the session's goroutine: it must be
	// cheap and safe for concurrent use.
	Observe func(Received)
	// Logger receives the go-smtp server's error log at debug level.
	// Default: discard.
	Logger *slog.Logger
}

// Reply is an answer the server gives when told to (Options.RcptReply).
type Reply struct {
	Code     int    // e.g. 554
	Enhanced string // RFC 3463 status, e.g. "5.7.1"; empty: none
	Message  string
}

// smtpError is r as go-smtp sends it.
func (r *Reply) smtpError() *smtp.SMTPError {
	enh := smtp.NoEnhancedCode
	var a, b, c int
	if _, err := fmt.Sscanf(r.Enhanced, "%d.%d.%d", &a, &b, &c); err == nil {
		enh = smtp.EnhancedCode{a, b, c}
	}
	return &smtp.SMTPError{Code: r.Code, EnhancedCode: enh, Message: r.Message}
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
	Rejected   int // 421 at MAIL plus 450/550 and RcptReply refusals at RCPT
	TempFails  int // 450 at RCPT
	PermFails  int // 550 at RCPT
	Refused    int // refused at RCPT by RcptReply
	Replied421 int
	Dropped    int // connections closed mid-DATA
	// DroppedAfterData counts messages kept whose reply never went out
	// (DropAfterData); they are in Accepted too.
	DroppedAfterData int
	Stalled          int // DATA never answered
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
	dropAfter                       map[string]bool

	sessions atomic.Int64
	dice     *dice // nil: no random faults
	faultN   faultCounters

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

// Start listens on 127.0.0.1 on a free port and serves until Close. It
// fails on Faults out of range.
func Start(opts Options) (*Server, error) {
	d, err := newDice(opts.Faults)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("smtptest: listen: %w", err)
	}
	s := &Server{
		opts:      opts,
		done:      make(chan struct{}),
		changed:   make(chan struct{}),
		serveErr:  make(chan error, 1),
		tempFail:  lowerSet(opts.TempFail),
		permFail:  lowerSet(opts.PermFail),
		drop:      lowerSet(opts.DropDuringData),
		stall:     lowerSet(opts.Stall),
		dropAfter: lowerSet(opts.DropAfterData),
		conns:     make(map[*faultConn]struct{}),
		dice:      d,
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

// StartT is Start for tests: a failure to start fails the test, and the
// server is closed at the test's cleanup.
func StartT(t testing.TB, opts Options) *Server {
	t.Helper()
	srv, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
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

// Reset forgets recorded messages and zeroes the message and fault
// counters (not the session count).
func (s *Server) Reset() {
	s.faultN.dropped.Store(0)
	s.faultN.tempFailed.Store(0)
	s.faultN.slowed.Store(0)
	s.faultN.clientGone.Store(0)
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
