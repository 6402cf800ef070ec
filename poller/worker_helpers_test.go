package poller_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/poller"
)

// wkT0 is when simulations start: a Monday, 00:00:00 UTC.
var wkT0 = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// wkBase is the FEEDMAIL_BASE_URL the test pollers put in their User-Agent.
const wkBase = "https://feedmail.example"

// wkPoller makes a poller on s with the guard off (farm feeds live on
// 127.0.0.1), a fixed jitter seed and the given owner.
func wkPoller(t testing.TB, s *store.Store, clk clock.Clock, owner string, mod func(*poller.Config)) *poller.Poller {
	t.Helper()
	cfg := poller.Config{
		Store: s, Clock: clk, Owner: owner,
		Fetch: fetcher.Config{BaseURL: wkBase, AllowPrivate: true, Timeout: 10 * time.Second},
		Rand:  rand.New(rand.NewPCG(1, uint64(len(owner)))),
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := poller.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// wkRun starts p.Run on its own goroutine; at cleanup (before the
// poller's own) it cancels Run, waits for it and fails the test unless it
// returned context.Canceled, so a test cannot leave Run going.
func wkRun(t testing.TB, p *poller.Poller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	})
}

// wkFollow makes (or finds) the feed of url and gives it n active instant
// subscriptions and d active digest subscriptions from new users.
func wkFollow(t testing.TB, s *store.Store, url string, n, d int) *store.Feed {
	t.Helper()
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n + d {
		u, _, err := s.EnsureUser(ctx, fmt.Sprintf("u%d-%d@example.com", f.ID, i))
		if err != nil {
			t.Fatal(err)
		}
		var dig *int64
		if i >= n {
			dg := store.Digest{UserID: u.ID, Name: "daily", Schedule: "@daily", Timezone: "UTC",
				NextSlotAt: wkT0.Add(24 * time.Hour), CreatedAt: wkT0}
			if err := s.DB.Create(&dg).Error; err != nil {
				t.Fatal(err)
			}
			dig = &dg.ID
		}
		if _, err := s.Subscribe(ctx, u.ID, f.ID, dig, true); err != nil {
			t.Fatal(err)
		}
	}
	f, err = s.FeedByID(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wkBulkFollow creates feeds for urls in bulk (one user per feed, plus
// extra[i] more subscribers for feed i), all due at due.
func wkBulkFollow(t testing.TB, s *store.Store, urls []string, extra []int, due time.Time) []store.Feed {
	t.Helper()
	feeds := make([]store.Feed, len(urls))
	for i, u := range urls {
		feeds[i] = store.Feed{URL: u, State: store.FeedActive, NextPollAt: due, PollReason: "new feed: first poll",
			CreatedAt: due, UpdatedAt: due}
	}
	if err := s.DB.CreateInBatches(feeds, 200).Error; err != nil {
		t.Fatal(err)
	}
	var users []store.User
	var owners []int
	for i := range feeds {
		k := 1
		if extra != nil {
			k += extra[i]
		}
		for j := range k {
			users = append(users, store.User{Email: fmt.Sprintf("f%d-u%d@example.com", feeds[i].ID, j), Timezone: "UTC", CreatedAt: due})
			owners = append(owners, i)
		}
	}
	if err := s.DB.CreateInBatches(users, 300).Error; err != nil {
		t.Fatal(err)
	}
	subs := make([]store.Subscription, len(users))
	for k, u := range users {
		now := due
		subs[k] = store.Subscription{UserID: u.ID, FeedID: feeds[owners[k]].ID, State: store.SubActive, CreatedAt: due, ConfirmedAt: &now}
	}
	if err := s.DB.CreateInBatches(subs, 300).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Exec(`UPDATE feeds SET subscriber_count = (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = feeds.id AND s.state = 'active')`).Error; err != nil {
		t.Fatal(err)
	}
	return feeds
}

// wkOpen opens a store for the test (SQLite unless the run says Postgres)
// driven by clk.
func wkOpen(t testing.TB, clk clock.Clock) *store.Store {
	t.Helper()
	return storetest.Open(t, storetest.Options{Clock: clk, MaxOpenConns: 24})
}

// wkFarm starts a farm on the fake clock (closed at cleanup).
func wkFarm(t testing.TB, clk clock.Clock) *farm.Farm {
	t.Helper()
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	return fm
}

func wkFeed(t testing.TB, s *store.Store, id int64) *store.Feed {
	t.Helper()
	f, err := s.FeedByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wkSum sums column over table.
func wkSum(t testing.TB, s *store.Store, table, column string) int64 {
	t.Helper()
	var n int64
	if err := s.DB.Table(table).Select("COALESCE(SUM(" + column + "), 0)").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func wkCount(t testing.TB, s *store.Store, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.DB.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
