package mailbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/dovecottest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// message returns a small RFC 5322 message whose Message-ID names i.
func message(i int) []byte {
	return []byte(fmt.Sprintf("From: MAILER-DAEMON@example.org\r\nTo: bounces@example.org\r\n"+
		"Subject: Undelivered Mail %d\r\nMessage-ID: <msg-%04d@test.example>\r\n"+
		"Date: Wed, 25 Nov 2026 10:00:00 +0000\r\n\r\nbody of message %d\r\n", i, i, i))
}

// key is what the real handler dedupes on: the Message-ID, else a hash.
func key(raw []byte) string {
	if m, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		if id := m.Header.Get("Message-ID"); id != "" {
			return id
		}
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(raw))
}

// effects is an idempotent handler's state: one effect per key, repeats
// counted apart.
type effects struct {
	mu      sync.Mutex
	order   []string       // keys in first-handled order
	seen    map[string]int // key -> effects applied (must stay 1)
	repeats int            // calls for a key already handled
	calls   int
}

func newEffects() *effects { return &effects{seen: map[string]int{}} }

// apply records raw's effect once; it returns whether this call was new.
func (e *effects) apply(raw []byte) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	k := key(raw)
	if e.seen[k] > 0 {
		e.repeats++
		return false
	}
	e.seen[k] = 1
	e.order = append(e.order, k)
	return true
}

func (e *effects) snapshot() (order []string, repeats, calls int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.order...), e.repeats, e.calls
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newReader(t *testing.T, srv *dovecottest.Server, implicitTLS bool, cfg Config, h Handler) (*Reader, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.URL = srv.URL(implicitTLS, "INBOX")
	cfg.TLS = srv.TLSConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reader logs:\n%s", logs.String())
		}
		if strings.Contains(logs.String(), srv.Password) {
			t.Errorf("the password appears in the logs")
		}
	})
	return r, logs
}

func wantKeys(n int) []string {
	var out []string
	for i := range n {
		out = append(out, key(message(i)))
	}
	return out
}

func TestRunOnceHandlesAllInUIDOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		implicitTLS bool
	}{{"imaps", true}, {"starttls", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := dovecottest.Start(t)
			const n = 50
			var msgs [][]byte
			for i := range n {
				msgs = append(msgs, message(i))
			}
			srv.Append(t, "INBOX", msgs...)
			e := newEffects()
			r, _ := newReader(t, srv, tc.implicitTLS, Config{Batch: 20}, func(_ context.Context, raw []byte, truncated bool) error {
				if truncated {
					t.Errorf("small message marked truncated")
				}
				e.apply(raw)
				return nil
			})
			start := time.Now()
			handled, err := r.RunOnce(t.Context())
			took := time.Since(start)
			if err != nil || handled != n {
				t.Fatalf("RunOnce = %d, %v; want %d, nil", handled, err, n)
			}
			t.Logf("%s: %d messages in %s: %.0f messages/second", tc.name, n, took, float64(n)/took.Seconds())
			order, repeats, _ := e.snapshot()
			if fmt.Sprint(order) != fmt.Sprint(wantKeys(n)) || repeats != 0 {
				t.Errorf("handled %v (repeats %d), want %v once each in UID order", order, repeats, wantKeys(n))
			}
			if got := srv.Count(t, "INBOX"); got != 0 {
				t.Errorf("INBOX holds %d, want 0", got)
			}
			if got := srv.Count(t, DefaultDoneFolder); got != n {
				t.Errorf("%s holds %d, want %d", DefaultDoneFolder, got, n)
			}
			if handled, err := r.RunOnce(t.Context()); handled != 0 || err != nil {
				t.Errorf("second pass = %d, %v; want 0, nil", handled, err)
			}
		})
	}
}

func TestRunSurvivesRestartMidBatch(t *testing.T) {
	srv := dovecottest.Start(t)
	const n, restartAt = 60, 20
	var msgs [][]byte
	for i := range n {
		msgs = append(msgs, message(i))
	}
	srv.Append(t, "INBOX", msgs...)
	e := newEffects()
	restartKey := key(message(restartAt))
	var once sync.Once
	restarted := make(chan struct{})
	r, _ := newReader(t, srv, true, Config{Batch: 25, Backoff: 20 * time.Millisecond, Poll: time.Minute},
		func(_ context.Context, raw []byte, _ bool) error {
			e.apply(raw)
			if key(raw) == restartKey {
				once.Do(func() {
					srv.Restart(t) // the handler has done its work; the move will fail
					close(restarted)
				})
			}
			return nil
		})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testutil.Eventually(t, 60*time.Second, func() bool {
		order, _, _ := e.snapshot()
		return len(order) == n && srv.Count(t, "INBOX") == 0
	}, "all messages handled and INBOX empty")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	select {
	case <-restarted:
	default:
		t.Fatal("the restart never happened")
	}
	order, repeats, calls := e.snapshot()
	if fmt.Sprint(order) != fmt.Sprint(wantKeys(n)) {
		t.Errorf("effects %v, want each of %d once in order", order, n)
	}
	if got := srv.Count(t, DefaultDoneFolder); got != n {
		t.Errorf("%s holds %d, want %d", DefaultDoneFolder, got, n)
	}
	if repeats < 1 {
		t.Errorf("no re-delivery seen: the message being handled at the restart should come again")
	}
	t.Logf("restart at message %d: %d handler calls for %d messages, %d re-deliveries (no-ops), 0 lost", restartAt, calls, n, repeats)
}

func TestHandlerErrorKeepsMessageAndOrder(t *testing.T) {
	srv := dovecottest.Start(t)
	const n, failAt = 10, 5
	var msgs [][]byte
	for i := range n {
		msgs = append(msgs, message(i))
	}
	srv.Append(t, "INBOX", msgs...)
	e := newEffects()
	errDB := errors.New("database unreachable")
	failKey := key(message(failAt))
	failed := false
	var calls []string
	r, _ := newReader(t, srv, false, Config{}, func(_ context.Context, raw []byte, _ bool) error {
		calls = append(calls, key(raw))
		if key(raw) == failKey && !failed {
			failed = true
			return errDB
		}
		e.apply(raw)
		return nil
	})
	handled, err := r.RunOnce(t.Context())
	if handled != failAt || !errors.Is(err, errDB) {
		t.Fatalf("first pass = %d, %v; want %d, %v", handled, err, failAt, errDB)
	}
	if got := srv.Count(t, "INBOX"); got != n-failAt {
		t.Errorf("after the error INBOX holds %d, want %d", got, n-failAt)
	}
	handled, err = r.RunOnce(t.Context())
	if handled != n-failAt || err != nil {
		t.Fatalf("second pass = %d, %v; want %d, nil", handled, err, n-failAt)
	}
	if calls[failAt+1] != failKey {
		t.Errorf("second pass began with %s, want the failed message %s", calls[failAt+1], failKey)
	}
	order, repeats, _ := e.snapshot()
	if fmt.Sprint(order) != fmt.Sprint(wantKeys(n)) || repeats != 0 {
		t.Errorf("effects %v (repeats %d), want each of %d once in order", order, repeats, n)
	}
	if got := srv.Count(t, "INBOX"); got != 0 {
		t.Errorf("INBOX holds %d, want 0", got)
	}
}

func TestLargeMessageArrivesTruncated(t *testing.T) {
	srv := dovecottest.Start(t)
	var big bytes.Buffer
	big.WriteString("From: a@example.org\r\nTo: b@example.org\r\nSubject: huge\r\nMessage-ID: <huge@test.example>\r\n\r\n")
	line := strings.Repeat("x", 998) + "\r\n"
	for big.Len() < 20<<20 {
		big.WriteString(line)
	}
	srv.Append(t, "INBOX", big.Bytes(), message(1))
	const maxBytes = 1 << 20
	type got struct {
		n         int
		truncated bool
		head      string
	}
	var seen []got
	r, _ := newReader(t, srv, true, Config{MaxBytes: maxBytes}, func(_ context.Context, raw []byte, truncated bool) error {
		seen = append(seen, got{len(raw), truncated, string(raw[:min(len(raw), 20)])})
		return nil
	})
	handled, err := r.RunOnce(t.Context())
	if handled != 2 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 2, nil", handled, err)
	}
	if len(seen) != 2 || !seen[0].truncated || seen[0].n > maxBytes || seen[0].n == 0 || seen[0].head != "From: a@example.org\r" {
		t.Errorf("20 MB message reached the handler as %+v, want truncated, 0 < len <= %d, from its start", seen, maxBytes)
	}
	if len(seen) == 2 && (seen[1].truncated || seen[1].n != len(message(1))) {
		t.Errorf("small message reached the handler as %+v", seen[1])
	}
	if got := srv.Count(t, "INBOX"); got != 0 {
		t.Errorf("INBOX holds %d, want 0", got)
	}
	if got := srv.Count(t, DefaultDoneFolder); got != 2 {
		t.Errorf("%s holds %d, want 2", DefaultDoneFolder, got)
	}
}

func TestRunWakesOnNewMail(t *testing.T) {
	srv := dovecottest.Start(t)
	e := newEffects()
	r, logs := newReader(t, srv, true, Config{Poll: 10 * time.Minute}, func(_ context.Context, raw []byte, _ bool) error {
		e.apply(raw)
		return nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// The reader has made its first (empty) pass once it logged a batch or
	// went idle; appending before that is fine too, only slower to prove.
	srv.Append(t, "INBOX", message(7))
	testutil.Eventually(t, 20*time.Second, func() bool {
		order, _, _ := e.snapshot()
		return len(order) == 1
	}, "the new message handled while idling, long before the 10 min poll")
	srv.Append(t, "INBOX", message(8))
	testutil.Eventually(t, 20*time.Second, func() bool {
		order, _, _ := e.snapshot()
		return len(order) == 2
	}, "a second new message handled while idling")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	_, _ = io.Discard, logs
}
