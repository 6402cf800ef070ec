package faults

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestServeExportsQueueDepths runs the real `feedmail serve` with every
// role, lets it poll one feed, and scrapes its /metrics for the three
// queue depths metrics.go documents: due_feeds, outbox and held
// (feedmail_queue_depth{queue=…}).
//
// due_feeds is set by the poller role (cmd/feedmail rolePoller runs
// metrics.WatchQueues with store.CountDueFeeds every 15 s); outbox and
// held by the outbox worker of the mailer role (store.OutboxDepths).
func TestServeExportsQueueDepths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the feedmail binary")
	}
	bin := buildFeedmail(t)
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	feed := fm.AddFeed(farm.Spec{Title: "Metrics feed", ItemCount: 2, ETag: farm.ETagStrong, LastModified: true})

	addr := freeAddr(t)
	base := "http://" + addr
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FEEDMAIL_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"FEEDMAIL_DATABASE_URL="+storetest.FreshDSN(t, storetest.URL()),
		"FEEDMAIL_LISTEN="+addr, "FEEDMAIL_BASE_URL="+base,
		"FEEDMAIL_FROM=feedmail@example.com", "FEEDMAIL_SECRET=faults-metrics-secret-0123456789",
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1", "FEEDMAIL_TRIAL_CREDITS=10",
		"FEEDMAIL_ROLES=web,poller,mailer,digest", "FEEDMAIL_MAILDIR="+filepath.Join(t.TempDir(), "mail"))
	run := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("feedmail %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("migrate")
	run("subscribe", "--email", "reader@example.net", "--feed", feed.URL(), "--confirmed")

	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("feedmail serve log:\n%s", logs.String())
		}
	})
	var got map[string]float64
	testutil.Eventually(t, 60*time.Second, func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got = parseExposition(t, string(b))
		_, polled := got[`feedmail_polls_total{outcome="ok",status="200"}`]
		_, depths := got[`feedmail_queue_depth{queue="outbox"}`]
		return polled && depths
	}, "feedmail serve polls the feed and its mailer reports the outbox depth")
	for _, q := range []string{"due_feeds", "outbox", "held"} {
		if _, ok := got[`feedmail_queue_depth{queue="`+q+`"}`]; !ok {
			t.Errorf(`feedmail_queue_depth{queue=%q} is not exported by feedmail serve`, q)
		}
	}
}

// buildFeedmail compiles ./cmd/feedmail into the test's temporary folder.
func buildFeedmail(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "feedmail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/feedmail")
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/feedmail: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer is a bytes.Buffer safe for the two writers of a process.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
