package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// doubling is a pause policy for the tests: 5 min doubling, no cap.
func doubling(streak int) time.Duration { return 5 * time.Minute << (streak - 1) }

// TestMailDestinationPause: the pause of a destination domain, shared by
// every process: a refusal while paused changes nothing, the streak grows
// with each pause and starts again after forget, a delivery started
// before a pause does not end it, a later one does.
func TestMailDestinationPause(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	t0 := clk.Now()
	const forget = 24 * time.Hour
	pause := func(want bool) store.MailDestination {
		t.Helper()
		d, paused, err := s.PauseMailDestination(ctx, "blocked.example", "blocked", doubling, forget)
		if err != nil || paused != want {
			t.Fatalf("pause at %v: paused %v (want %v), %v", clk.Now(), paused, want, err)
		}
		return d
	}
	if d := pause(true); d.Failures != 1 || !d.PausedUntil.Equal(t0.Add(5*time.Minute)) || d.Reason != "blocked" {
		t.Fatalf("first pause %+v", d)
	}
	clk.Advance(time.Minute)
	if d := pause(false); d.Failures != 1 || !d.PausedUntil.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("a refusal while paused changed the pause: %+v", d)
	}
	clk.Set(t0.Add(5 * time.Minute))
	if d := pause(true); d.Failures != 2 || !d.PausedUntil.Equal(clk.Now().Add(10*time.Minute)) {
		t.Fatalf("second pause %+v", d)
	}
	got, err := s.MailDestinations(ctx, []string{"blocked.example", "fine.example"})
	if err != nil || len(got) != 1 || got["blocked.example"].Failures != 2 {
		t.Fatalf("MailDestinations = %+v, %v", got, err)
	}
	// A delivery that began before the pause was set does not end it.
	if n, err := s.ClearMailDestinations(ctx, []string{"blocked.example"}, clk.Now().Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("clear with an older send: %d, %v", n, err)
	}
	// A streak whose last pause ended more than forget ago starts again.
	clk.Advance(10*time.Minute + forget + time.Second)
	if d := pause(true); d.Failures != 1 {
		t.Fatalf("after forget: %+v", d)
	}
	if n, err := s.ClearMailDestinations(ctx, []string{"blocked.example", "fine.example"}, clk.Now()); err != nil || n != 1 {
		t.Fatalf("clear: %d, %v", n, err)
	}
	if got, _ := s.MailDestinations(ctx, []string{"blocked.example"}); len(got) != 0 {
		t.Fatalf("still there: %+v", got)
	}
}

// TestMailDestinationPauseConcurrent: workers refused at the same moment
// (here on one store; on Postgres as separate processes would) make one
// pause, not a streak.
func TestMailDestinationPauseConcurrent(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	dsn := storetest.FreshDSN(t, storetest.URL())
	a := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	b := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk, NoMigrate: true})
	var wg sync.WaitGroup
	var mu sync.Mutex
	paused := 0
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			_, p, err := s.PauseMailDestination(context.Background(), "busy.example", "rate-limited", doubling, time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if p {
				mu.Lock()
				paused++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got, _ := a.MailDestinations(context.Background(), []string{"busy.example"})
	if paused != 1 || got["busy.example"].Failures != 1 {
		t.Errorf("%d calls paused, streak %d; want 1 and 1", paused, got["busy.example"].Failures)
	}
}

// TestDeferOutbox: a put-back counts no attempt, starts blocked_since once
// and is guarded by the lease.
func TestDeferOutbox(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	u := newUser(t, s, "ann@blocked.example", 5)
	now := clk.Now()
	id := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
		Address: u.Email, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	first := now
	for i, owner := range []string{"w1", "w2"} {
		rows := claimAll(t, s, owner, clk.Now())
		if len(rows) != 1 {
			t.Fatalf("claim %d: %d rows", i, len(rows))
		}
		if n, err := s.DeferOutbox(ctx, "someone-else", []int64{id}, clk.Now().Add(time.Hour), "x"); err != nil || n != 0 {
			t.Fatalf("a worker without the lease put it back: %d, %v", n, err)
		}
		until := clk.Now().Add(5 * time.Minute)
		if n, err := s.DeferOutbox(ctx, owner, []int64{id, id}, until, "waiting: paused"); err != nil || n != 1 {
			t.Fatalf("defer: %d, %v", n, err)
		}
		got, _ := s.OutboxByID(ctx, id)
		if got.Attempts != 0 || got.State != store.OutboxQueued || !got.NextAttemptAt.Equal(until) || got.LeaseOwner != "" ||
			got.BlockedSince == nil || !got.BlockedSince.Equal(first) || got.LastError != "waiting: paused" {
			t.Fatalf("after put-back %d: %+v", i, got)
		}
		clk.Set(until)
	}
}

// TestPruneMailRecords: events older than the cut go, in bounded batches;
// destinations whose pause ended long ago go too.
func TestPruneMailRecords(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	var evs []store.MailEvent
	for i := range 5 {
		evs = append(evs, store.MailEvent{At: now.Add(-time.Duration(100-i) * 24 * time.Hour), Domain: "old.example",
			Source: store.MailSourceSMTP, Kind: store.MailFailure, Reason: "blocked", Party: "sender"})
	}
	evs = append(evs, store.MailEvent{At: now.Add(-time.Hour), Domain: "new.example", Source: store.MailSourceSMTP, Kind: store.MailFailure})
	if err := s.RecordMailEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PauseMailDestination(ctx, "old.example", "blocked", doubling, time.Hour); err != nil {
		t.Fatal(err)
	}
	cut := now.Add(-90 * 24 * time.Hour)
	if n, err := s.PruneMailRecords(ctx, cut, now.Add(-time.Hour), 3); err != nil || n != 3 {
		t.Fatalf("first batch: %d, %v", n, err)
	}
	if got, _ := s.MailDestinations(ctx, []string{"old.example"}); len(got) != 1 {
		t.Fatal("a paused destination was pruned")
	}
	clk.Advance(2 * time.Hour)
	if n, err := s.PruneMailRecords(ctx, cut, clk.Now().Add(-time.Hour), 3); err != nil || n != 2 {
		t.Fatalf("second batch: %d, %v", n, err)
	}
	if got, _ := s.MailDestinations(ctx, []string{"old.example"}); len(got) != 0 {
		t.Fatal("a pause long over was kept")
	}
	var left int64
	s.DB.Model(&store.MailEvent{}).Count(&left)
	if left != 1 {
		t.Errorf("%d events left, want the recent one", left)
	}
}
