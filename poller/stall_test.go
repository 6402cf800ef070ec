package poller_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// One fetch that hangs (a host that answers nothing until the client's
// timeout) must not leave Run's other workers idle: while it hangs, the
// feeds that come due are claimed and polled by the next passes, the
// fetches in flight stay within Config.Concurrency, the hung feed is not
// claimed twice, and once it answers it is written and no lease is left.
// Before passes could overlap, the first pass waited for the hung fetch and
// no feed was polled a second time until it ended.
func TestRunKeepsPollingWhileOneFetchHangs(t *testing.T) {
	const steady, conc = 10, 4
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	var inflight, peak atomic.Int32
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			h.ServeHTTP(w, r)
		})
	}
	quick := httptest.NewServer(count(fm))
	t.Cleanup(quick.Close)
	slow := newHangingHost(t, "127.0.0.2:0", fm, count) // a host of its own

	var urls []string
	for range steady {
		urls = append(urls, quick.URL+fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).Path())
	}
	hangURL := slow.URL + fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).Path()
	feeds := wkBulkFollow(t, s, append(urls, hangURL), nil, clk.Now())
	hangID := feeds[steady].ID
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.Concurrency, c.IdleWait, c.Lease = conc, 10*time.Millisecond, time.Hour
		c.Fetch.Timeout = 10 * time.Minute // the hang ends when the test says
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()

	polled := func() int64 { return wkCount(t, s, "poll_log", "feed_id <> ?", hangID) }
	waitFor(t, func() bool { return polled() == steady && slow.hung.Load() == 1 }, "the first polls made, one fetch hanging")
	// Every steady feed is due again (within 5–10 min of its first poll);
	// the hung feed's lease (an hour) still runs.
	clk.Advance(20 * time.Minute)
	deadline := time.Now().Add(20 * time.Second)
	for polled() < 2*steady && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := polled(); n < 2*steady {
		t.Fatalf("while one fetch hung, %d polls of the %d other feeds were recorded in 20 s; want %d (each polled again)", n, steady, 2*steady)
	}
	if h := slow.hung.Load(); h != 1 {
		t.Fatalf("the hung feed was fetched %d times, want once", h)
	}
	slow.release()
	waitFor(t, func() bool {
		return wkCount(t, s, "poll_log", "feed_id = ?", hangID) == 1 && wkCount(t, s, "feeds", "lease_owner <> ''") == 0
	}, "the hung feed's poll written and no feed leased")
	cancel()
	stopped = true
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if n := wkCount(t, s, "hosts", "lease_owner <> ''"); n != 0 {
		t.Errorf("%d hosts still leased after Run ended", n)
	}
	if got := peak.Load(); got > conc {
		t.Errorf("%d fetches in flight at once, Concurrency is %d", got, conc)
	}
}
