// Package hooksink runs a webhook receiver on 127.0.0.1 for fault runs: it
// answers 2xx to what feedmail's webhook channel sends, verifies the
// Standard Webhooks signature when given the secret, and at random,
// reproducibly from a seed, answers 500 or hangs until the client gives
// up. Every request answered 2xx, or taken in full from a client that
// hung up before the answer, is handed to Options.Observe, so an oracle
// can count deliveries by webhook-id without trusting feedmail's tables.
//
// Test infrastructure: never linked into cmd/feedmail. It keeps nothing
// but counts and forwards nothing anywhere.
package hooksink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Options configure a Server. Shares are in [0,1] and Fail500+Timeout
// must not exceed 1.
type Options struct {
	Seed    int64
	Fail500 float64 // share of requests answered 500
	Timeout float64 // share of requests left hanging (TimeoutBy or until the client gives up), then cut off
	// TimeoutBy is how long a Timeout hangs (default 30 s).
	TimeoutBy time.Duration
	// Secret (whsec_...), when set, makes the server verify the Standard
	// Webhooks signature; a bad one (or a timestamp out of the standard's
	// five-minute window, unless IgnoreTimestamp) answers 401 and is
	// counted as BadSignature.
	Secret          string
	IgnoreTimestamp bool // for senders on a fake clock
	// Observe, when set, is called for every request answered 2xx, before
	// the answer is written, and for one whose client hung up before it
	// (Hook.ReplyLost). It must be cheap and safe for concurrent use.
	Observe func(Hook)
}

// Hook is one request the server accepted.
type Hook struct {
	ID   string // webhook-id
	Path string
	Body []byte // the callee may keep it
	At   time.Time
	// ReplyLost: the client had hung up by the time the 2xx would have
	// been written. A real receiver has acted on the hook by then, though
	// its sender never learns: a webhook's own duplicate window.
	ReplyLost bool
}

// Counts counts the requests by how they were answered.
type Counts struct {
	Accepted     int64 // 2xx
	Failed500    int64
	TimedOut     int64 // hung, then cut off without an answer
	BadSignature int64 // 401
	ClientGone   int64 // taken in full, the client gone before the 2xx (Hook.ReplyLost)
}

// maxBody is the largest body read; a larger one answers 413, uncounted.
const maxBody = 8 << 20

// Server is a running receiver.
type Server struct {
	opts   Options
	dice   *dice
	verify *standardwebhooks.Webhook // nil without a secret
	ln     net.Listener
	srv    *http.Server
	url    string

	mu        sync.Mutex    // guards closed and hangs.Add against Close's Wait
	closed    bool          // set by Close: no new hang starts
	done      chan struct{} // closed by Close: hangs end
	closeOnce sync.Once
	hangs     sync.WaitGroup

	accepted, failed500, timedOut, badSig, clientGone atomic.Int64
}

// Start listens on 127.0.0.1 on a free port and serves until Close. It
// fails on shares out of range or a secret that is not a whsec_ secret.
func Start(o Options) (*Server, error) {
	d, err := newDice(o.Seed, o.Fail500, o.Timeout)
	if err != nil {
		return nil, err
	}
	if o.TimeoutBy < 0 {
		return nil, errors.New("hooksink: negative TimeoutBy")
	}
	if o.TimeoutBy == 0 {
		o.TimeoutBy = 30 * time.Second
	}
	s := &Server{opts: o, dice: d, done: make(chan struct{})}
	if o.Secret != "" {
		if s.verify, err = standardwebhooks.NewWebhook(o.Secret); err != nil {
			return nil, fmt.Errorf("hooksink: secret: %w", err)
		}
	}
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("hooksink: listen: %w", err)
	}
	s.url = "http://" + s.ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // cut-off connections are not news
	go func() { _ = s.srv.Serve(s.ln) }()
	return s, nil
}

// StartT is Start for tests: a failure to start fails the test, and the
// server is closed at the test's cleanup.
func StartT(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// URL returns the server's base URL ("http://127.0.0.1:PORT"); any path
// under it receives.
func (s *Server) URL() string { return s.url }

// Counts returns the counts so far.
func (s *Server) Counts() Counts {
	return Counts{Accepted: s.accepted.Load(), Failed500: s.failed500.Load(),
		TimedOut: s.timedOut.Load(), BadSignature: s.badSig.Load(), ClientGone: s.clientGone.Load()}
}

// Close stops the server: hanging requests are cut off, connections
// closed.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.mu.Unlock()
		err = s.srv.Close()
		s.hangs.Wait()
	})
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP answers one delivery: the fault drawn for it, else 401 for a
// bad signature, else 200 after Observe (or, when the client is already
// gone, Observe with ReplyLost and no answer).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return // the client went away
	}
	if len(body) > maxBody {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	switch s.dice.roll() {
	case faultTimeout:
		s.hang(r.Context())
		cutOff(w)
		return
	case fault500:
		s.failed500.Add(1)
		http.Error(w, "injected fault", http.StatusInternalServerError)
		return
	}
	if err := s.check(body, r.Header); err != nil {
		s.badSig.Add(1)
		http.Error(w, "bad signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	gone := r.Context().Err() != nil
	if gone {
		s.clientGone.Add(1)
	} else {
		s.accepted.Add(1)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(Hook{ID: r.Header.Get("webhook-id"), Path: r.URL.Path, Body: body, At: time.Now(), ReplyLost: gone})
	}
	if gone {
		cutOff(w)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// check verifies the signature of body when the server has a secret.
func (s *Server) check(body []byte, h http.Header) error {
	switch {
	case s.verify == nil:
		return nil
	case s.opts.IgnoreTimestamp:
		return s.verify.VerifyIgnoringTimestamp(body, h)
	}
	return s.verify.Verify(body, h)
}

// hang counts a timeout and waits TimeoutBy, or less when the client gives
// up or the server closes. The count comes after the hang is registered,
// so Close, once it sees the count, waits for it (never Add during Wait).
func (s *Server) hang(ctx context.Context) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.timedOut.Add(1)
		return
	}
	s.hangs.Add(1)
	s.mu.Unlock()
	defer s.hangs.Done()
	s.timedOut.Add(1)
	t := time.NewTimer(s.opts.TimeoutBy)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-s.done:
	}
}

// cutOff closes the request's connection without an answer.
func cutOff(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}
