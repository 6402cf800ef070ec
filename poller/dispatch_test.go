package poller_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/poller"
)

// hangingHost is a feed host on an address of its own whose requests hang
// until the test releases them (or the client gives up).
type hangingHost struct {
	*httptest.Server
	hung     atomic.Int32 // requests that arrived
	gate     chan struct{}
	released sync.Once
}

// newHangingHost starts a hanging host on addr (e.g. "127.0.0.2:0") in
// front of next, its handler wrapped by wrap when not nil; it is released
// and closed at cleanup.
func newHangingHost(t *testing.T, addr string, next http.Handler, wrap func(http.Handler) http.Handler) *hangingHost {
	t.Helper()
	h := &hangingHost{gate: make(chan struct{})}
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	h.Server = httptest.NewUnstartedServer(wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hung.Add(1)
		select {
		case <-h.gate:
		case <-r.Context().Done():
		}
		next.ServeHTTP(w, r)
	})))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h.Listener.Close()
	h.Listener = ln
	h.Start()
	t.Cleanup(h.Close)
	t.Cleanup(h.release)
	return h
}

// release lets every hanging request (and every later one) answer.
func (h *hangingHost) release() { h.released.Do(func() { close(h.gate) }) }

// A feed waiting for its host's request slots must not hold one of the
// poller's fetch slots: with every slot of one host taken by hung
// requests, the feeds of the other hosts are fetched at once, whatever
// their place in the pass. Before, a worker took a fetch slot and then
// waited for the host, so two hung requests and two feeds behind them
// held all four fetch slots and no other host was polled until the hangs
// ended (up to the fetch timeout, then the lease's budget).
func TestFeedsOfAHungHostDoNotHoldBackOtherHosts(t *testing.T) {
	const perHost, conc = 12, 4
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	quick := httptest.NewServer(fm)
	t.Cleanup(quick.Close)
	hang := newHangingHost(t, "127.0.0.2:0", fm, nil)

	var hangURLs, quickURLs []string
	for range perHost {
		hangURLs = append(hangURLs, hang.URL+fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).Path())
		quickURLs = append(quickURLs, quick.URL+fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).Path())
	}
	// The hung host's feeds come first in the pass (oldest due first).
	hangFeeds := wkBulkFollow(t, s, hangURLs, nil, clk.Now().Add(-time.Hour))
	wkBulkFollow(t, s, quickURLs, nil, clk.Now())
	m := metrics.New()
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.Concurrency, c.Lease, c.Metrics = conc, time.Hour, m
		c.Fetch.Timeout = 10 * time.Minute // the hangs end when the test says
	})
	done := make(chan error, 1)
	go func() {
		_, err := p.PollDue(context.Background())
		done <- err
	}()

	hangIDs := fmt.Sprint(hangFeeds[0].ID, ",", hangFeeds[perHost-1].ID)
	quickPolled := func() (bool, string) {
		n := wkCount(t, s, "poll_log", "feed_id > ?", hangFeeds[perHost-1].ID)
		return n == perHost, fmt.Sprintf("%d of %d feeds of the quick host polled, %d requests hanging on the other (feeds %s)", n, perHost, hang.hung.Load(), hangIDs)
	}
	testutil.EventuallySeen(t, 30*time.Second, quickPolled, "every feed of the quick host polled while the other host's requests hang")
	if n := hang.hung.Load(); n != poller.MaxInFlightPerHost {
		t.Errorf("%d requests to the hung host, want its %d slots' worth", n, poller.MaxInFlightPerHost)
	}
	slots := func(state string) float64 { return gaugeValue(t, m.PollSlots.WithLabelValues(state)) }
	testutil.EventuallySeen(t, 30*time.Second, func() (bool, string) {
		f, h, q := slots("fetching"), slots("waiting_host"), slots("waiting_fetch")
		return f == poller.MaxInFlightPerHost && h == perHost-poller.MaxInFlightPerHost && q == 0,
			fmt.Sprintf("fetching %v, waiting_host %v, waiting_fetch %v", f, h, q)
	}, "feedmail_poll_slots showing the hung host's 2 fetches and its 10 feeds waiting for it")

	hang.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := wkCount(t, s, "poll_log", "1 = 1"); n != 2*perHost {
		t.Errorf("%d polls written, want %d", n, 2*perHost)
	}
	if f := slots("fetching"); f != 0 {
		t.Errorf("feedmail_poll_slots{state=fetching} is %v after the pass, want 0", f)
	}
}
