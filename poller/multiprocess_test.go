package poller_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/poller"
)

// Three pollers, each with its own Store (its own connection pool, as three
// processes would have) on one Postgres database, run their passes at the
// same moments against the same farm for three simulated hours. No feed is
// fetched twice within its interval, and the work is shared.
func TestThreePollersOnePostgres(t *testing.T) {
	clk := clock.NewFake(wkT0)
	stores := threeStores(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()

	type kind struct {
		spec farm.Spec
		gap  time.Duration
	}
	kinds := []kind{
		{farm.Spec{ETag: farm.ETagStrong, LastModified: true}, 5 * time.Minute},
		{farm.Spec{}, 15 * time.Minute},
		{farm.Spec{ETag: farm.ETagWeak, CacheControl: "max-age=1200"}, 20 * time.Minute},
		{farm.Spec{Status: 500}, 4 * time.Hour},
	}
	var urls []string
	gaps := map[int]time.Duration{}
	for i := range 300 {
		k := kinds[i%len(kinds)]
		ff := fm.AddFeed(k.spec)
		urls = append(urls, ff.URL())
		gaps[ff.ID()] = k.gap
	}
	wkBulkFollow(t, stores[0], urls, nil, clk.Now())

	var polled [3]atomic.Int64
	var pollers [3]*poller.Poller
	for i := range pollers {
		i := i
		pollers[i] = wkPoller(t, stores[i], clk, fmt.Sprintf("proc-%d", i), func(c *poller.Config) {
			c.Concurrency = 4
			c.Batch = 8
			c.AfterPoll = func(context.Context, poller.PollEvent) { polled[i].Add(1) }
		})
	}
	end := wkT0.Add(3 * time.Hour)
	for clk.Now().Before(end) {
		passTogether(t, pollers[:])
		next, ok, err := stores[0].NextPollDue(ctx, "")
		if err != nil || !ok {
			t.Fatalf("next due: %v %v", ok, err)
		}
		at := next.Truncate(time.Second)
		if at.Before(next) {
			at = at.Add(time.Second)
		}
		if !at.After(clk.Now()) {
			at = clk.Now().Add(time.Second)
		}
		clk.Set(at)
	}

	total := 0
	for _, ff := range fm.Feeds() {
		reqs := ff.Requests()
		total += len(reqs)
		if len(reqs) == 0 {
			t.Errorf("feed %d never polled", ff.ID())
		}
		for i := 1; i < len(reqs); i++ {
			if gap := reqs[i].Time.Sub(reqs[i-1].Time); gap < gaps[ff.ID()] {
				t.Errorf("feed %d fetched twice within %v (interval %v)", ff.ID(), gap, gaps[ff.ID()])
			}
		}
	}
	if n := wkSum(t, stores[0], "feeds", "log_seq"); n != int64(total) {
		t.Errorf("feeds count %d recorded polls for %d requests", n, total)
	}
	for i := range polled {
		if polled[i].Load() == 0 {
			t.Errorf("poller %d polled nothing", i)
		}
	}
	t.Logf("%d requests; polls per poller: %d %d %d", total, polled[0].Load(), polled[1].Load(), polled[2].Load())
}

// Three pollers, each with its own Store on one Postgres and enough workers
// to put 2 requests in flight to each host on its own, poll two hosts whose
// every answer takes 25 ms. Publishers must still never see more than 2
// requests in flight at once (the host leases of ClaimDueFeeds), and every
// feed is polled once per round.
func TestThreePollersKeepTwoInFlightPerHost(t *testing.T) {
	clk := clock.NewFake(wkT0)
	stores := threeStores(t, clk)
	var fms [2]*farm.Farm
	for i := range fms {
		fm, err := farm.Listen(clk, fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			t.Skipf("no loopback address 127.0.0.%d: %v", i+1, err)
		}
		t.Cleanup(fm.Close)
		fms[i] = fm
	}
	const perHost = 40
	var urls []string
	for i := range 2 * perHost {
		urls = append(urls, fms[i%2].AddFeed(farm.Spec{ETag: farm.ETagStrong, Latency: 25 * time.Millisecond}).URL())
	}
	wkBulkFollow(t, stores[0], urls, nil, clk.Now())

	var polled [3]atomic.Int64
	var pollers [3]*poller.Poller
	for i := range pollers {
		pollers[i] = wkPoller(t, stores[i], clk, fmt.Sprintf("proc-%d", i), func(c *poller.Config) {
			c.Concurrency = 8
			c.Batch = 8
			c.AfterPoll = func(context.Context, poller.PollEvent) { polled[i].Add(1) }
		})
	}
	requests := func() int {
		n := 0
		for _, fm := range fms {
			n += len(fm.Requests())
		}
		return n
	}
	const rounds = 3
	for round := 1; round <= rounds; round++ {
		// Passes run side by side until every feed of the round was polled:
		// a poller that finds every due feed's host held by another returns
		// early, as Run would before trying again.
		deadline := time.Now().Add(time.Minute)
		for requests() < round*len(urls) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d requests, want %d", round, requests(), round*len(urls))
			}
			passTogether(t, pollers[:])
		}
		clk.Advance(time.Hour) // every feed is due again
	}
	for i, fm := range fms {
		if got := len(fm.Requests()); got != rounds*perHost {
			t.Errorf("host %d: %d requests, want %d (one per feed per round)", i+1, got, rounds*perHost)
		}
		// The limit is reached (so the test could see a breach) and held.
		if m := fm.MaxInFlight(); m > poller.MaxInFlightPerHost || m < 2 {
			t.Errorf("host %d: at most %d requests in flight at once; want exactly %d", i+1, m, poller.MaxInFlightPerHost)
		}
	}
	var held int64
	if err := stores[0].DB.Raw("SELECT COUNT(*) FROM hosts WHERE lease_owner <> ''").Scan(&held).Error; err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d host leases still held after every pass ended", held)
	}
	t.Logf("max in flight per host: %d, %d; polls per poller: %d %d %d",
		fms[0].MaxInFlight(), fms[1].MaxInFlight(), polled[0].Load(), polled[1].Load(), polled[2].Load())
}

// passTogether runs one PollDue of every poller at the same time, as
// processes sharing a database would, and fails on any error.
func passTogether(t *testing.T, pollers []*poller.Poller) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(pollers))
	for i, p := range pollers {
		wg.Go(func() { _, errs[i] = p.PollDue(context.Background()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// threeStores opens three Stores, each with its own connection pool as three
// processes would have, on one fresh Postgres database.
func threeStores(t *testing.T, clk clock.Clock) [3]*store.Store {
	t.Helper()
	dsn := storetest.FreshDSN(t, storetest.PostgresURL(t))
	var stores [3]*store.Store
	for i := range stores {
		stores[i] = storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	}
	return stores
}
