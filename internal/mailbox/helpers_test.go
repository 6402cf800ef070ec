package mailbox

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"sync"
	"testing"

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

func newReader(t *testing.T, srv *dovecottest.Server, implicitTLS bool, cfg Config, h Handler) (*Reader, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{}
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
