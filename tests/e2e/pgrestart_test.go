package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestPostgresRestart runs two `feedmail serve` processes with every role
// on a private PostgreSQL cluster (never the shared server: other packages
// test against it at the same time), publishes posts round after round, and
// restarts the cluster (`pg_ctl restart -m fast`) right after a round's
// posts went out, while their polls and emails are in flight. The
// processes must reconnect on their own and carry on: /healthz answers 200
// again, and every post reaches every follower exactly once (instant
// emails and digests), those of the round at the restart included. The
// checks are the scale-out test's (see TestScaleOutKill9): Message-IDs
// counted at the sink, every fetch explained, one digest issue per slot.
//
// Nothing is allowed: an email the server accepted just before the
// restart, whose "sent" record then failed, is recorded once the database
// is back (the mailer retries the write while its lease lasts), so it is
// never sent a second time; polls and digest assemblies whose write failed
// are retried the same way instead of waiting for their leases to run out.
func TestPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster and two feedmail processes")
	}
	pg := startPGCluster(t)
	w := newScaleOut(t, pg.URL, scaleOutSize{feeds: 300, users: 75, hosts: 2, procs: 2, rounds: 8, perRound: 30,
		every: 5 * time.Second})
	w.settleWithin = 4 * time.Minute
	w.faultRound = 4
	var sinkAtRestart int
	var restartedAt time.Time
	w.midRun = func(round int) {
		if round != w.faultRound {
			return
		}
		w.waitBusy("%")
		start := time.Now()
		pg.restart()
		restartedAt = time.Now()
		sinkAtRestart = w.sink.Count()
		t.Logf("pg_ctl restart -m fast took %s; %d emails at the sink by then", restartedAt.Sub(start).Round(time.Millisecond), sinkAtRestart)
		for _, p := range w.procs {
			testutil.Eventually(t, 60*time.Second, p.healthy, p.name+" answers /healthz with 200 after the restart")
		}
		t.Logf("both processes answer /healthz with 200 %s after the restart", time.Since(restartedAt).Round(time.Millisecond))
	}
	// No explain and no lostRecord: every duplicate and every row left
	// unrecorded fails the test.
	w.run()

	for _, p := range w.procs {
		if !p.healthy() {
			t.Errorf("%s does not answer /healthz with 200 at the end", p.name)
		}
		retried, nRetried := p.Log.Grep("retried", 3)
		errs, nErr := p.Log.Grep("level=ERROR", 6)
		warns, nWarn := p.Log.Grep("level=WARN", 3)
		t.Logf("%s retried %d writes through the restart, logged %d errors and %d warnings; the first ones:\n%s",
			p.name, nRetried, nErr, nWarn, strings.Join(append(append(retried, errs...), warns...), "\n"))
		// Every role that started waiting for the database says it is back.
		waits, nWaits := p.Log.Grep("database unreachable: waiting for it", 6)
		backs, nBacks := p.Log.Grep("database reachable again", 6)
		if nWaits != nBacks {
			t.Errorf("%s: %d roles started waiting for the database, %d said it was back:\n%s", p.name, nWaits, nBacks,
				strings.Join(append(waits, backs...), "\n"))
		}
		t.Logf("%s: %d waits for the database, each ended:\n%s", p.name, nWaits, strings.Join(backs, "\n"))
	}
}

// TestPostgresRestartMidSend restarts the database at the worst moment
// for an email, every time: after the SMTP server has read the message and
// before it answers 250, so the mailer's "sent" record meets a database
// whose connections were just cut. The record must be retried until the
// database is back: each email arrives once, every row ends sent, and a
// pass after the lease has run out sends nothing again.
func TestPostgresRestartMidSend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster")
	}
	pg := startPGCluster(t)
	ctx := context.Background()
	var once sync.Once
	restarted := make(chan time.Duration, 1)
	smtp := smtptest.StartT(t, smtptest.Options{BeforeAccept: func() {
		once.Do(func() {
			start := time.Now()
			pg.restart()
			restarted <- time.Since(start)
		})
	}})
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	st := storetest.OpenDSN(t, pg.URL, storetest.Options{Clock: clk})
	sign, err := token.NewSigner([]byte("pg-restart-mid-send-secret-0123"))
	if err != nil {
		t.Fatal(err)
	}
	const base, from = "http://127.0.0.1:8080", "feedmail@feedmail.test"
	w := newWorkers(t, clk, st, smtp, links.New(base, sign, from), from, "midsend")

	// Three readers of one feed, three new posts: nine emails.
	f, _, err := st.EnsureFeed(ctx, "https://blog.example.org/feed")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		u, _, err := st.EnsureUser(ctx, fmt.Sprintf("reader%d@example.net", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.GrantTrialOnce(ctx, u.ID, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Subscribe(ctx, u.ID, f.ID, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	now := clk.Now()
	var items []store.NewItem
	for i := range 3 {
		items = append(items, store.NewItem{Identity: fmt.Sprint("post-", i), GUID: fmt.Sprint("post-", i),
			Link: fmt.Sprintf("https://blog.example.org/%d", i), Title: fmt.Sprintf("Post %d", i), Content: "<p>news</p>", PublishedAt: &now})
	}
	out, err := st.RecordPoll(ctx, "", store.PollRecord{FeedID: f.ID, At: now, Outcome: "pushed", Status: 200, Push: true,
		Items: items, State: store.FeedState{PrimedAt: &now}})
	if err != nil || out.Emails != 9 {
		t.Fatalf("queueing the emails: %+v, %v", out, err)
	}

	if _, err := w.outbox.SendDue(ctx); err != nil {
		t.Fatalf("the pass that met the restart: %v", err)
	}
	t.Logf("pg_ctl restart -m fast took %s while the SMTP server held the first email", (<-restarted).Round(time.Millisecond))
	// Whatever is left, and then a pass long after every lease.
	for range 3 {
		if _, err := w.outbox.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(outbox.DefaultLease + time.Minute)
	if _, err := w.outbox.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	copies := map[string]int{}
	for _, m := range smtp.Messages() {
		copies[m.Header.Get("Message-Id")]++
	}
	for id, n := range copies {
		if n != 1 {
			t.Errorf("%s arrived %d times", id, n)
		}
	}
	var unsent int64
	if err := st.DB.Model(&store.OutboxRow{}).Where("state <> ?", store.OutboxSent).Count(&unsent).Error; err != nil {
		t.Fatal(err)
	}
	if len(copies) != 9 || unsent != 0 {
		t.Fatalf("%d distinct emails arrived (want 9), %d outbox rows not sent (want 0)", len(copies), unsent)
	}
}
