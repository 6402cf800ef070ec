package mailbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/dovecottest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

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
	r, logs := newReader(t, srv, true, Config{Batch: 25, Backoff: 20 * time.Millisecond, Poll: time.Minute},
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
	if !strings.Contains(logs.String(), "reconnecting") {
		t.Errorf("no reconnection logged")
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

func TestRunRetriesAfterHandlerError(t *testing.T) {
	srv := dovecottest.Start(t)
	const n = 5
	var msgs [][]byte
	for i := range n {
		msgs = append(msgs, message(i))
	}
	srv.Append(t, "INBOX", msgs...)
	e := newEffects()
	var mu sync.Mutex
	failures := 0
	r, logs := newReader(t, srv, false, Config{Backoff: 10 * time.Millisecond, Poll: time.Minute}, func(_ context.Context, raw []byte, _ bool) error {
		mu.Lock()
		defer mu.Unlock()
		if key(raw) == key(message(2)) && failures < 2 {
			failures++
			return errors.New("database unreachable")
		}
		e.apply(raw)
		return nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testutil.Eventually(t, 20*time.Second, func() bool {
		order, _, _ := e.snapshot()
		return len(order) == n
	}, "every message handled after two failures")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	order, repeats, _ := e.snapshot()
	if fmt.Sprint(order) != fmt.Sprint(wantKeys(n)) || repeats != 0 {
		t.Errorf("effects %v (repeats %d), want each of %d once in order", order, repeats, n)
	}
	if got := strings.Count(logs.String(), "reconnecting"); got != 2 {
		t.Errorf("%d reconnections logged, want 2 (one per handler error)", got)
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
	if !strings.Contains(logs.String(), "handled=1") {
		t.Errorf("no batch logged at info")
	}
}

// Without MOVE the reader copies, flags \Deleted and expunges (UID EXPUNGE
// with UIDPLUS, else EXPUNGE); without IDLE it polls.
func TestFallbacksWithoutMoveOrIdle(t *testing.T) {
	for _, without := range [][]string{{"MOVE", "IDLE"}, {"MOVE", "IDLE", "UIDPLUS"}} {
		t.Run(strings.Join(without, "-"), func(t *testing.T) {
			srv := dovecottest.StartWith(t, dovecottest.Options{Without: without})
			const n = 12
			var msgs [][]byte
			for i := range n - 1 {
				msgs = append(msgs, message(i))
			}
			srv.Append(t, "INBOX", msgs...)
			e := newEffects()
			r, _ := newReader(t, srv, false, Config{Batch: 5, Poll: 50 * time.Millisecond}, func(_ context.Context, raw []byte, _ bool) error {
				e.apply(raw)
				return nil
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			testutil.Eventually(t, 20*time.Second, func() bool {
				order, _, _ := e.snapshot()
				return len(order) == n-1
			}, "the first messages handled")
			srv.Append(t, "INBOX", message(n-1))
			testutil.Eventually(t, 20*time.Second, func() bool {
				order, _, _ := e.snapshot()
				return len(order) == n && srv.Count(t, "INBOX") == 0
			}, "a new message picked up by polling, INBOX empty")
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
			order, repeats, _ := e.snapshot()
			if fmt.Sprint(order) != fmt.Sprint(wantKeys(n)) || repeats != 0 {
				t.Errorf("effects %v (repeats %d), want each of %d once in order", order, repeats, n)
			}
			if got := srv.Count(t, DefaultDoneFolder); got != n {
				t.Errorf("%s holds %d, want %d", DefaultDoneFolder, got, n)
			}
			// Dovecot logs a session's counts when it ends: MOVE would not
			// count the messages as deleted.
			testutil.Eventually(t, 10*time.Second, func() bool {
				return strings.Contains(srv.Logs(), fmt.Sprintf("deleted=%d expunged=%d", n, n))
			}, "the reader's session copied, flagged \\Deleted and expunged every message")
		})
	}
}

// Connecting refuses a certificate it does not trust, over imaps and
// STARTTLS, and a wrong password; no error shows the password.
func TestConnectFailures(t *testing.T) {
	srv := dovecottest.Start(t)
	h := func(context.Context, []byte, bool) error { return nil }
	wrongPass := strings.Replace(srv.URL(true, "INBOX"), srv.Password, "Wr0ngPassw0rd", 1)
	cases := []struct {
		name, url string
		trust     bool
		want      string
	}{
		{"untrusted imaps", srv.URL(true, "INBOX"), false, "certificate"},
		{"untrusted starttls", srv.URL(false, "INBOX"), false, "certificate"},
		{"wrong password", wrongPass, true, "refused the login"},
	}
	for _, tc := range cases {
		cfg := Config{URL: tc.url}
		if tc.trust {
			cfg.TLS = srv.TLSConfig()
		}
		r, err := New(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.RunOnce(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
		if refused := errors.Is(err, ErrLoginRefused); refused != (tc.name == "wrong password") {
			t.Errorf("%s: errors.Is(err, ErrLoginRefused) = %v", tc.name, refused)
		}
		if err != nil && (strings.Contains(err.Error(), srv.Password) || strings.Contains(err.Error(), "Wr0ngPassw0rd")) {
			t.Errorf("%s: error shows the password: %v", tc.name, err)
		}
	}
}

// TestNextPause: failures double the pause up to its cap, a session that
// got somewhere starts again from the first pause, and a refused login
// waits the longest at once.
func TestNextPause(t *testing.T) {
	first := time.Second
	refused := fmt.Errorf("mailbox: login as %q: %w: NO", "u", ErrLoginRefused)
	lost := errors.New("mailbox: connection closed")
	tests := []struct {
		name       string
		err        error
		progressed bool
		pause      time.Duration
		wait, next time.Duration
	}{
		{"first failure", lost, false, first, first, 2 * first},
		{"doubles", lost, false, 8 * first, 8 * first, 16 * first},
		{"capped", lost, false, 4 * time.Minute, 4 * time.Minute, maxBackoff},
		{"stays capped", lost, false, maxBackoff, maxBackoff, maxBackoff},
		{"progress resets", lost, true, maxBackoff, first, 2 * first},
		{"refused login waits longest", refused, false, first, maxBackoff, maxBackoff},
		{"refused after progress too", refused, true, first, maxBackoff, maxBackoff},
	}
	for _, tc := range tests {
		wait, next := nextPause(tc.err, tc.progressed, tc.pause, first)
		if wait != tc.wait || next != tc.next {
			t.Errorf("%s: nextPause = %s, %s; want %s, %s", tc.name, wait, next, tc.wait, tc.next)
		}
	}
}
