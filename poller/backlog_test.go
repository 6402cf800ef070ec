package poller_test

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// While Run works through a backlog of first polls (an import into a
// running installation), feeds in steady state that come due are polled
// in the next pass, not after the backlog: Run's passes are bounded
// (Config.PassFeeds) and claim what came due since the previous pass
// first.
func TestRunPollsSteadyFeedsThroughABacklog(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	slow := wkFarm(t, clk)
	quick, err := farm.Listen(clk, "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(quick.Close)
	const backlog, steady = 1500, 10
	var urls []string
	for range backlog {
		urls = append(urls, slow.AddFeed(farm.Spec{ETag: farm.ETagStrong, Latency: 4 * time.Millisecond}).URL())
	}
	wkBulkFollow(t, s, urls, nil, wkT0.Add(-time.Hour))
	urls = urls[:0]
	for range steady {
		urls = append(urls, quick.AddFeed(farm.Spec{ETag: farm.ETagStrong}).URL())
	}
	polled := wkBulkFollow(t, s, urls, nil, wkT0.Add(30*time.Second))
	ids := make([]int64, len(polled))
	for i, f := range polled {
		ids[i] = f.ID
	}
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ? WHERE id IN ?", wkT0.Add(-5*time.Minute), ids).Error; err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.IdleWait, c.Batch, c.PassFeeds = 10*time.Millisecond, 64, 128
	})
	wkRun(t, p)
	waitFor(t, func() bool { return len(slow.Requests()) >= 100 }, "the backlog's first 100 polls")
	clk.Set(wkT0.Add(time.Minute)) // the steady feeds are due
	waitFor(t, func() bool { return len(quick.Requests()) == steady }, "every steady feed polled once")
	if n := len(slow.Requests()); n >= backlog {
		t.Fatalf("the steady feeds waited for the whole backlog: %d of %d first polls made before them", n, backlog)
	}
}
