package poller_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/clock"
	"github.com/feedmail/feedmail/farm"
	"github.com/feedmail/feedmail/poller"
	"github.com/feedmail/feedmail/store"
	"github.com/feedmail/feedmail/store/storetest"
)

// Three pollers, each with its own Store (its own connection pool, as three
// processes would have) on one Postgres database, run their passes at the
// same moments against the same farm for three simulated hours. No feed is
// fetched twice within its interval, and the work is shared.
func TestThreePollersOnePostgres(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.PostgresURL(t))
	clk := clock.NewFake(wkT0)
	var stores [3]*store.Store
	for i := range stores {
		stores[i] = storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	}
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
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i, p := range pollers {
			wg.Go(func() { _, errs[i] = p.PollDue(ctx) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		next, ok, err := stores[0].NextPollDue(ctx)
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
	if n := wkCount(t, stores[0], "poll_log", "1 = 1"); n != int64(total) {
		t.Errorf("poll_log %d rows for %d requests", n, total)
	}
	for i := range polled {
		if polled[i].Load() == 0 {
			t.Errorf("poller %d polled nothing", i)
		}
	}
	t.Logf("%d requests; polls per poller: %d %d %d", total, polled[0].Load(), polled[1].Load(), polled[2].Load())
}
