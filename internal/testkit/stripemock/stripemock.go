// Package stripemock starts Stripe's official API mock (stripe-mock) for a
// test: on a free loopback port, stopped by its PID at cleanup, behind a
// recording proxy so the test sees every request the code under test made
// and every refusal the mock gave. stripe-mock checks each request against
// Stripe's published API description, so a request Stripe would refuse is
// refused here too. Test infrastructure only: never imported by the
// product.
//
// The binary is looked up as $FEEDMAIL_STRIPE_MOCK_DIR/stripe-mock, then
// on PATH; CI installs it with
//
//	GOBIN=DIR go install github.com/stripe/stripe-mock@latest
//
// Without it the test skips (fails under CI=true).
package stripemock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Exchange is one request made through the proxy and the mock's answer.
type Exchange struct {
	Method, Path string
	// Form is the request's form body (Stripe's API takes form encoding).
	Form url.Values
	// Status and Body are the mock's answer.
	Status int
	Body   []byte
}

// Server is a running stripe-mock behind a recording proxy.
type Server struct {
	// URL is the proxy's base URL: give it to the code under test as
	// Stripe's API URL.
	URL string
	// Direct is stripe-mock's own base URL.
	Direct string

	dir       string
	cmd       *exec.Cmd
	exited    chan struct{}
	mu        sync.Mutex
	exchanges []Exchange
}

// Start starts stripe-mock for t; t.Cleanup stops it (and the proxy).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		testutil.SkipOrFail(t, "stripe-mock is not installed: "+err.Error())
	}
	s := &Server{dir: t.TempDir()}
	addr := proc.FreeAddr(t)
	s.Direct = "http://" + addr
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("stripe-mock log:\n%s", s.logs())
		}
	})
	if err := s.start(bin, addr); err != nil {
		t.Fatalf("stripemock: %v", err)
	}
	target, _ := url.Parse(s.Direct)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = s.record
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		r = r.WithContext(withForm(r.Context(), form))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	s.URL = proxy.URL
	return s
}

// binary finds the stripe-mock command.
func binary() (string, error) {
	if d := os.Getenv("FEEDMAIL_STRIPE_MOCK_DIR"); d != "" {
		p := filepath.Join(d, "stripe-mock")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("stripe-mock")
	if err != nil {
		return "", errors.New("stripe-mock not in $FEEDMAIL_STRIPE_MOCK_DIR or PATH")
	}
	return p, nil
}

// start runs stripe-mock on addr (its HTTPS side on a Unix socket in the
// test's folder, so it takes no shared port) and waits until it answers.
func (s *Server) start(bin, addr string) error {
	log, err := os.Create(filepath.Join(s.dir, "stripe-mock.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, "-http-addr", addr, "-https-unix", filepath.Join(s.dir, "https.sock"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start stripe-mock: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.Direct + "/v1/balance") // any answer (401 without a key) means it serves
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("stripe-mock exited at start:\n%s", s.logs())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering after 60s (last error %v):\n%s", s.Direct, err, s.logs())
		}
	}
}

// stop ends the process by its PID and waits for it.
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *Server) logs() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "stripe-mock.log"))
	return string(b)
}

// record keeps the exchange of resp (its body put back for the client).
func (s *Server) record(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r := resp.Request
	s.mu.Lock()
	s.exchanges = append(s.exchanges, Exchange{Method: r.Method, Path: r.URL.Path, Form: formOf(r.Context()),
		Status: resp.StatusCode, Body: body})
	s.mu.Unlock()
	return nil
}

// Exchanges returns the requests made so far, oldest first.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.exchanges...)
}

// Refused returns the exchanges the mock did not answer with a 2xx: the
// requests Stripe would refuse.
func (s *Server) Refused() []Exchange {
	var out []Exchange
	for _, e := range s.Exchanges() {
		if e.Status < 200 || e.Status > 299 {
			out = append(out, e)
		}
	}
	return out
}

// formKey carries a request's form from the proxy's handler to record.
type formKey struct{}

func withForm(ctx context.Context, f url.Values) context.Context {
	return context.WithValue(ctx, formKey{}, f)
}

func formOf(ctx context.Context) url.Values {
	f, _ := ctx.Value(formKey{}).(url.Values)
	return f
}
