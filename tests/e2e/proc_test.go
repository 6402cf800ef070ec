package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// Helpers for the tests that run several `feedmail serve` processes
// (scaleout_test.go, pgrestart_test.go).

// procBuild is the feedmail binary built once per test binary run (the
// tests that need it share it; TestMain removes it). It is the only
// package-level state here, and it only ever caches the build.
var procBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// procBinary builds ./cmd/feedmail on first use and returns its path.
func procBinary(t *testing.T) string {
	t.Helper()
	procBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "feedmail-e2e-bin-")
		if err != nil {
			procBuild.err = err
			return
		}
		procBuild.dir = dir
		procBuild.bin, procBuild.err = proc.Build(dir)
	})
	if procBuild.err != nil {
		t.Fatal(procBuild.err)
	}
	return procBuild.bin
}

// procEventually is testutil.Eventually for conditions that cost database
// queries: it checks cond every `every` (not every few milliseconds) until
// it holds, or fails the test after within.
func procEventually(t *testing.T, within, every time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", within, msg)
		}
		<-tick.C
	}
}

// procSettle waits like procEventually for a condition that says what
// is still missing ("" once it holds), and fails with the last thing it
// said, so a failed wait names the part of the condition not met.
func procSettle(t *testing.T, within, every time.Duration, missing func() string, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		left := missing()
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s; last seen: %s", within, msg, left)
		}
		<-tick.C
	}
}

// fmProc is one running `feedmail serve`.
type fmProc struct {
	*proc.Proc
	t    *testing.T
	name string
	addr string // FEEDMAIL_LISTEN
	base string // FEEDMAIL_BASE_URL: http://addr, also in its User-Agent
}

// startProc starts `feedmail serve` with vars (FEEDMAIL_LISTEN and
// FEEDMAIL_BASE_URL are set here) and waits until /healthz answers 200.
// At cleanup it is stopped with SIGTERM (unless already dead); its log is
// shown when the test failed.
func startProc(t *testing.T, bin, name string, vars map[string]string) *fmProc {
	t.Helper()
	addr := proc.FreeAddr(t)
	p := &fmProc{t: t, name: name, addr: addr, base: "http://" + addr}
	v := map[string]string{}
	for k, val := range vars {
		v[k] = val
	}
	v["FEEDMAIL_LISTEN"] = addr
	v["FEEDMAIL_BASE_URL"] = p.base
	pr, err := proc.Start(bin, proc.Env(v), "serve")
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p.Proc = pr
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- last lines of %s (pid %d) ---\n%s", name, p.Pid(), p.Log.Tail(40))
		}
	})
	return p
}

// waitHealthy waits until /healthz answers 200, or fails the test.
func (p *fmProc) waitHealthy(within time.Duration) {
	p.t.Helper()
	p.WaitHealthy(p.t, p.name, p.base, within)
}

// healthy reports whether /healthz answers 200 now.
func (p *fmProc) healthy() bool { return proc.Healthy(p.base) }

// ownerPrefix is how this process's lease owners begin ("host-pid-"):
// every role names its leases "<host>-<pid>-<role>…".
func (p *fmProc) ownerPrefix() string {
	h, err := os.Hostname()
	if err != nil {
		h = "feedmail"
	}
	return strings.ReplaceAll(h, " ", "-") + fmt.Sprintf("-%d-", p.Pid())
}

// kill9 kills the process with SIGKILL and waits for it to be gone.
func (p *fmProc) kill9() {
	p.t.Helper()
	if err := p.Kill(30 * time.Second); err != nil {
		p.t.Fatalf("kill -9 %s: %v", p.name, err)
	}
}

// stop ends the process gracefully (SIGTERM, then SIGKILL after 30 s); a
// process that already exited is left alone. A non-zero exit after SIGTERM
// is an error.
func (p *fmProc) stop() {
	err := p.Stop(30 * time.Second)
	switch {
	case errors.Is(err, proc.ErrStopTimeout):
		p.t.Errorf("%s did not stop within 30 s of SIGTERM", p.name)
	case err != nil:
		p.t.Errorf("%s exited with %v after SIGTERM", p.name, err)
	}
}

// procFarms starts n farms on the real clock on 127.0.0.1 … 127.0.0.n (the
// poller's per-host limit applies to each), fewer where the system only
// answers on 127.0.0.1.
func procFarms(t *testing.T, n int) []*farm.Farm {
	t.Helper()
	var out []*farm.Farm
	for i := range n {
		fm, err := farm.Listen(clock.Real{}, fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			if i == 0 {
				t.Fatal(err)
			}
			t.Logf("only %d farm hosts: %v", i, err)
			break
		}
		t.Cleanup(fm.Close)
		out = append(out, fm)
	}
	return out
}

// procSink starts an SMTP sink that keeps messages.
func procSink(t *testing.T) *smtptest.Server {
	t.Helper()
	return smtptest.StartT(t, smtptest.Options{})
}

// procBulk inserts rows in batches small enough for any database.
func procBulk[T any](t *testing.T, st *store.Store, rows []T, batch int) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	if err := st.DB.CreateInBatches(rows, batch).Error; err != nil {
		t.Fatalf("insert %T: %v", rows[0], err)
	}
}

// procUsers creates n people (prefix<i>@example.net) with credits enough
// for any test, as a bulk import would.
func procUsers(t *testing.T, st *store.Store, prefix string, n int, credits int64) []store.User {
	t.Helper()
	now := time.Now().UTC()
	users := make([]store.User, n)
	for i := range users {
		users[i] = store.User{Email: fmt.Sprintf("%s%d@example.net", prefix, i), Timezone: "UTC", Balance: credits,
			ConfirmedAt: &now, TrialGranted: true, CreatedAt: now}
	}
	procBulk(t, st, users, 500)
	grants := make([]store.LedgerEntry, n)
	for i, u := range users {
		grants[i] = store.LedgerEntry{UserID: u.ID, Kind: store.LedgerGrant, Amount: credits, BalanceAfter: credits,
			IdempotencyKey: fmt.Sprintf("e2e-grant:%d", u.ID), Reason: "e2e", CreatedAt: now}
	}
	procBulk(t, st, grants, 500)
	return users
}

// sinkMail is one message at the sink, decoded for the checks.
type sinkMail struct {
	index     int // order of acceptance
	messageID string
	to        string
	text      string // the text/plain part, decoded
}

// sinkMails decodes every message the sink accepted.
func sinkMails(t *testing.T, sink *smtptest.Server) []sinkMail {
	t.Helper()
	msgs := sink.Messages()
	out := make([]sinkMail, 0, len(msgs))
	for i, m := range msgs {
		sm := sinkMail{index: i}
		if len(m.To) > 0 {
			sm.to = strings.ToLower(m.To[0])
		}
		msg, err := netmail.ReadMessage(bytes.NewReader(m.Raw))
		if err != nil {
			t.Errorf("message %d is unreadable: %v", i, err)
			continue
		}
		sm.messageID = msg.Header.Get("Message-Id")
		sm.text = textPart(msg)
		out = append(out, sm)
	}
	return out
}

// textPart returns the decoded text/plain part of msg ("" if none).
func textPart(msg *netmail.Message) string {
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, _ := io.ReadAll(msg.Body)
		return string(b)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			return ""
		}
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if pt == "text/plain" {
			b, _ := io.ReadAll(p) // quoted-printable is decoded by multipart
			return string(b)
		}
	}
}

// fetchLog is every feed request the farms saw, by farm feed, in order.
type fetchLog map[*farm.Feed][]farm.Record

func procFetches(farms []*farm.Farm) fetchLog {
	out := fetchLog{}
	for _, fm := range farms {
		for _, f := range fm.Feeds() {
			for _, r := range f.Requests() {
				if r.Path == f.Path() {
					out[f] = append(out[f], r)
				}
			}
		}
	}
	return out
}
