package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// twoProcesses returns a fixture and a second handle on its database (a
// process about to die; the fixture's is its successor's), with a person
// holding 20 credits and n item emails queued for them.
func twoProcesses(t *testing.T, email string, n int) (*fixture, *store.Store, *store.User) {
	t.Helper()
	clk := clock.NewFake(t0)
	dsn := storetest.FreshDSN(t, storetest.URL())
	dying := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	fx := newFixtureOn(t, storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk}), clk)
	u, sub := fx.user(email, 20)
	for range n {
		fx.queueItem(u, sub)
	}
	return fx, dying, u
}

// TestOutboxCrashAtEachStep kills a worker at each step of a pass and lets
// a second worker (another process on the same database) take over once
// the lease runs out. Every email must arrive, none may be charged twice,
// and duplicates on the wire are counted: only a death after the server
// accepted and before the row was marked sent can duplicate, and since each
// acceptance is recorded as it comes, only the few whose marks were
// waiting (at most MaxUnmarked, plus one per connection when the death
// comes while messages are on the wire) arrive twice — not the chunk.
func TestOutboxCrashAtEachStep(t *testing.T) {
	const emails, pool, maxUnmarked = 12, 2, 2
	cases := []struct {
		step    string
		how     string // "hook": stop the pass; "close": lose the database
		at      int    // "accepted": the acceptance (1-based) the process dies after
		maxDups int
	}{
		{step: "claimed", how: "hook"},
		{step: "charged", how: "hook"},
		// Dies once the chunk's replies all came: only marks still waiting
		// for their commit are lost.
		{step: "sent", how: "hook", maxDups: maxUnmarked},
		// Dies right after the server accepted the 5th message, with the
		// next ones on the wire.
		{step: "accepted", how: "hook", at: 5, maxDups: maxUnmarked + pool},
		// Loses the database as the server accepts the 5th message: the
		// sending stops instead of handing the rest of the chunk over.
		{step: "accepted", how: "close", at: 5, maxDups: maxUnmarked + pool},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/at-%d", c.step, c.how, c.at), func(t *testing.T) {
			fx, dying, u := twoProcesses(t, "crash@example.net", emails)
			var accepted atomic.Int64
			srv := smtptest.StartT(t, smtptest.Options{BeforeAccept: func() {
				// The server holds its 250 for the at-th message until the
				// database is gone.
				if n := accepted.Add(1); c.how == "close" && n == int64(c.at) {
					_ = dying.Close()
				}
			}})
			params := fmt.Sprintf("pool=%d", pool)
			a := fx.outbox(smtpTo(t, srv, params), "dies", func(cfg *OutboxConfig) { cfg.Store, cfg.MaxUnmarked = dying, maxUnmarked })
			var seen atomic.Int64
			a.crash = func(step string) bool {
				if step != c.step || c.how != "hook" {
					return false
				}
				return step != "accepted" || seen.Add(1) == int64(c.at)
			}
			if _, err := a.SendDue(context.Background()); err == nil {
				t.Fatal("the dying pass reported success")
			} else if c.how == "hook" && !errors.Is(err, errCrashed) {
				t.Fatalf("dying pass: %v", err)
			}
			// Before the lease runs out, nobody else may touch the rows.
			b := fx.outbox(smtpTo(t, srv, params), "successor")
			if n := fx.pass(b); n != 0 {
				t.Fatalf("successor claimed %d rows inside the lease", n)
			}
			fx.clk.Advance(5*time.Minute + time.Second)
			fx.pass(b)
			counts := byMessageID(srv)
			if len(counts) != emails {
				t.Errorf("%d distinct emails arrived, want %d: %v", len(counts), emails, counts)
			}
			dups := duplicates(counts)
			t.Logf("crash after %q (%s): %d duplicate(s) on the wire", c.step, c.how, dups)
			if dups > c.maxDups {
				t.Errorf("%d duplicates, want at most %d", dups, c.maxDups)
			}
			e := fx.entries(u)
			if e[store.LedgerCharge] != emails || e[store.LedgerRefund] != 0 || fx.balance(u) != 20-emails {
				t.Errorf("ledger %v balance %d: want %d charges, no refund", e, fx.balance(u), emails)
			}
			var sent int64
			fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
			if sent != emails {
				t.Errorf("%d rows marked sent, want %d", sent, emails)
			}
		})
	}
}

// TestOutboxShutdownMidSend cancels the worker's context while the server
// sits on a message: what was accepted is recorded, the rest is released at
// once (no attempt counted) and goes out exactly once on the next pass.
func TestOutboxShutdownMidSend(t *testing.T) {
	fx := newFixture(t)
	stalling := smtptest.StartT(t, smtptest.Options{Stall: []string{"slow@example.net"}})
	healthy := smtptest.StartT(t, smtptest.Options{})
	tr := &smtptest.Switch{}
	tr.Set(smtpTo(t, stalling, "pool=1&timeout=1m"))
	ob := fx.outbox(tr, "w1")
	fast, fsub := fx.user("fast@example.net", 5)
	slow, ssub := fx.user("slow@example.net", 5)
	first := fx.queueItem(fast, fsub)
	stuck := fx.queueItem(slow, ssub)
	after := fx.queueItem(fast, fsub)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ob.SendDue(ctx)
		done <- err
	}()
	waitCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := stalling.WaitFor(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return stalling.Stats().Stalled > 0 }, "the server stalls")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("SendDue after cancel: %v", err)
	}
	if got := fx.row(first.ID); got.State != store.OutboxSent {
		t.Errorf("accepted before the shutdown: %s", got.State)
	}
	for _, r := range []*store.OutboxRow{stuck, after} {
		got := fx.row(r.ID)
		if got.State != store.OutboxQueued || got.Attempts != 0 || got.LeaseOwner != "" || got.NextAttemptAt.After(fx.clk.Now()) {
			t.Errorf("unsent row %d: %s attempts %d owner %q due %v", r.ID, got.State, got.Attempts, got.LeaseOwner, got.NextAttemptAt)
		}
	}
	tr.Set(smtpTo(t, healthy, ""))
	if n := fx.pass(ob); n != 2 {
		t.Fatalf("next pass claimed %d, want 2", n)
	}
	all := byMessageID(stalling)
	for id, n := range byMessageID(healthy) {
		all[id] += n
	}
	if len(all) != 3 || duplicates(all) != 0 {
		t.Errorf("on the wire: %v", all)
	}
	if e := fx.entries(slow); e[store.LedgerCharge] != 1 {
		t.Errorf("slow reader charged %d times", e[store.LedgerCharge])
	}
	if e := fx.entries(fast); e[store.LedgerCharge] != 2 {
		t.Errorf("fast reader charged %d times", e[store.LedgerCharge])
	}
}
