package poller_test

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// On a machine too small for its feeds, the feeds in steady state that
// come due fill every bounded pass; a backlog (an import's first polls)
// still gets its share of each pass instead of waiting for the steady
// feeds to run out, which on such a machine never happens.
func TestRunGivesTheBacklogAShareOfEachPass(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	steadyFarm := wkFarm(t, clk)
	listen := func(addr string) *farm.Farm {
		fm, err := farm.Listen(clk, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fm.Close)
		return fm
	}
	backlogFarm, firstFarm := listen("127.0.0.2:0"), listen("127.0.0.3:0")
	const steady, backlog, passFeeds = 64, 8, 16
	follow := func(fm *farm.Farm, n int, due time.Time) []int64 {
		var urls []string
		for range n {
			urls = append(urls, fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).URL())
		}
		var ids []int64
		for _, f := range wkBulkFollow(t, s, urls, nil, due) {
			ids = append(ids, f.ID)
		}
		return ids
	}
	// Feeds in steady state, polled before, due in a minute.
	ids := follow(steadyFarm, steady, wkT0.Add(time.Minute))
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ? WHERE id IN ?", wkT0.Add(-4*time.Minute), ids).Error; err != nil {
		t.Fatal(err)
	}
	// One feed due now: when it is polled, Run's first pass is over and
	// its next passes claim the feeds due from then on first.
	follow(firstFarm, 1, wkT0.Add(-2*time.Hour))
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.IdleWait, c.Batch, c.PassFeeds = 10*time.Millisecond, 4, passFeeds
	})
	wkRun(t, p)
	waitFor(t, func() bool { return len(firstFarm.Requests()) == 1 }, "the first pass's feed polled")
	// An import of never-polled feeds, due since an hour ago, and the
	// steady feeds all due: more of them than a pass may claim.
	follow(backlogFarm, backlog, wkT0.Add(-time.Hour))
	clk.Set(wkT0.Add(2 * time.Minute))
	waitFor(t, func() bool { return len(backlogFarm.Requests()) == backlog }, "every backlog feed polled")
	if n := len(steadyFarm.Requests()); n >= steady {
		t.Fatalf("the backlog waited for every steady feed: %d of %d steady polls made before its last", n, steady)
	}
	waitFor(t, func() bool { return len(steadyFarm.Requests()) == steady }, "every steady feed polled")
}
