package poller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// A feed's life through PollDue: the first poll records everything as seen
// and mails nothing; a 304 keeps the validators; a new post is mailed to
// each instant subscriber and queued for each digest subscriber, once.
func TestPollDueFirstPollThenNewItem(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ff := fm.AddFeed(farm.Spec{ItemCount: 5, ETag: farm.ETagStrong, LastModified: true, ItemInterval: time.Hour})
	f := wkFollow(t, s, ff.URL(), 2, 1)
	p := wkPoller(t, s, clk, "w1", nil)
	ctx := context.Background()

	n, err := p.PollDue(ctx)
	if err != nil || n != 1 {
		t.Fatalf("first pass: n=%d err=%v", n, err)
	}
	got := wkFeed(t, s, f.ID)
	if got.PrimedAt == nil || got.ETag != ff.ETag() || got.LastModified != ff.LastModified() || got.LeaseOwner != "" {
		t.Fatalf("after first poll: %+v", got)
	}
	if n := wkCount(t, s, "items", "feed_id = ? AND ignored_rule = ?", f.ID, store.IgnoredFirstPoll); n != 5 {
		t.Fatalf("first poll recorded %d items as seen, want 5", n)
	}
	if n := wkCount(t, s, "outbox", "1 = 1"); n != 0 {
		t.Fatalf("first poll queued %d emails", n)
	}
	// fast + ETag + Last-Modified: 5 min default; after a first poll the
	// jitter is up to the whole interval.
	if d := got.NextPollAt.Sub(wkT0); d < 5*time.Minute || d >= 10*time.Minute {
		t.Fatalf("next poll in %v (%s)", d, got.PollReason)
	}

	// Nothing due yet.
	if n, err := p.PollDue(ctx); err != nil || n != 0 {
		t.Fatalf("early pass polled %d (%v)", n, err)
	}
	clk.Set(got.NextPollAt)
	if n, err := p.PollDue(ctx); err != nil || n != 1 {
		t.Fatalf("second pass: n=%d err=%v", n, err)
	}
	reqs := ff.Requests()
	if len(reqs) != 2 || reqs[1].Status != 304 || reqs[1].IfNoneMatch != ff.ETag() || reqs[1].IfModifiedSince != ff.LastModified() {
		t.Fatalf("second request %+v", reqs[len(reqs)-1])
	}

	ff.Publish()
	clk.Advance(6 * time.Minute)
	if n, err := p.PollDue(ctx); err != nil || n != 1 {
		t.Fatalf("third pass: n=%d err=%v", n, err)
	}
	if n := wkCount(t, s, "outbox", "kind = ? AND state = ?", store.KindItem, store.OutboxQueued); n != 2 {
		t.Fatalf("new item queued %d emails, want 2", n)
	}
	if n := wkCount(t, s, "digest_items", "feed_id = ?", f.ID); n != 1 {
		t.Fatalf("new item queued %d digest items, want 1", n)
	}
	got = wkFeed(t, s, f.ID)
	if got.ETag != ff.ETag() || got.LastNewItemAt == nil || !got.LastNewItemAt.Equal(clk.Now()) {
		t.Fatalf("after new item: etag %q last new %v", got.ETag, got.LastNewItemAt)
	}
	if n := wkCount(t, s, "poll_log", "feed_id = ?", f.ID); n != 3 {
		t.Fatalf("poll_log has %d rows, want 3", n)
	}
}

// At most two requests are in flight to one host, however many workers are
// free; a second host is served in parallel.
func TestAtMostTwoRequestsInFlightPerHost(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	var inflight, peak atomic.Int32
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		fm.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(counting)
	t.Cleanup(srv.Close)
	var urls []string
	for range 12 {
		ff := fm.AddFeed(farm.Spec{ETag: farm.ETagStrong, Latency: 30 * time.Millisecond})
		urls = append(urls, srv.URL+ff.Path())
	}
	wkBulkFollow(t, s, urls, nil, clk.Now())
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) { c.Concurrency = 8 })
	if n, err := p.PollDue(context.Background()); err != nil || n != 12 {
		t.Fatalf("pass: %d %v", n, err)
	}
	if got := peak.Load(); got != poller.MaxInFlightPerHost {
		t.Fatalf("peak in flight to one host %d, want %d", got, poller.MaxInFlightPerHost)
	}
	if n := wkCount(t, s, "poll_log", "status = 200"); n != 12 {
		t.Fatalf("%d polls recorded", n)
	}
}

// TestFeedsWaitingPastTheirLeaseAreGivenBack: a claim holds more feeds of
// one slow host than its two request slots can fetch within the lease. The
// feeds that could not start in time are given back, no longer leased,
// rather than fetched after the lease allows (no fetch may outlive its
// lease: another process could claim the feed meanwhile), and keep their
// place in line: due when they were due, so that the next pass takes them
// before any feed that came due after them. (Due a minute later, they went
// behind every feed coming due meanwhile: a host kept busy by hung
// requests starved the same feeds for 12 minutes in a fault run.) Real
// time: the lease budget is measured against the waiting for slots.
func TestFeedsWaitingPastTheirLeaseAreGivenBack(t *testing.T) {
	const (
		feeds   = 20
		latency = 500 * time.Millisecond
		timeout = time.Second
		lease   = 8 * time.Second
		// A fetch may start while its lease has more than a timeout and 5 s
		// of safety left: at most 2 s after the claim.
		budget = lease - timeout - 5*time.Second
	)
	clk := clock.Real{}
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	srv := httptest.NewServer(fm)
	t.Cleanup(srv.Close)
	var urls []string
	var farmIDs []int
	for range feeds {
		ff := fm.AddFeed(farm.Spec{ETag: farm.ETagStrong, Latency: latency})
		urls, farmIDs = append(urls, srv.URL+ff.Path()), append(farmIDs, ff.ID())
	}
	followed := wkBulkFollow(t, s, urls, nil, clk.Now())
	due := map[int64]time.Time{}
	for _, f := range followed {
		due[f.ID] = wkFeed(t, s, f.ID).NextPollAt
	}
	m := metrics.New()
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.Concurrency = 8
		c.Lease = lease
		c.Fetch.Timeout = timeout
		c.Metrics = m
	})
	start := time.Now()
	if n, err := p.PollDue(context.Background()); err != nil || n != feeds {
		t.Fatalf("pass: %d %v", n, err)
	}
	end := time.Now()

	fetched := map[int]int{}
	for _, r := range fm.Requests() {
		fetched[r.FeedID]++
		if late := r.Time.Sub(start); late > budget+700*time.Millisecond {
			t.Errorf("feed %d fetched %v after the pass began; the lease allowed %v", r.FeedID, late, budget)
		}
	}
	given := 0
	for i, f := range followed {
		got := wkFeed(t, s, f.ID)
		if got.LeaseOwner != "" {
			t.Errorf("feed %d still leased to %q after the pass", i, got.LeaseOwner)
		}
		switch fetched[farmIDs[i]] {
		case 0:
			given++
			if !got.NextPollAt.Equal(due[f.ID]) {
				t.Errorf("given-back feed %d due at %v, want its place in line kept: due at %v, as before the pass (%v – %v)",
					i, got.NextPollAt, due[f.ID], start, end)
			}
		case 1:
		default:
			t.Errorf("feed %d fetched %d times", i, fetched[farmIDs[i]])
		}
	}
	// 2 slots × 2 s / 0.5 s: about 8 fetched, the rest given back.
	t.Logf("%d fetched, %d given back", len(fetched), given)
	if len(fetched) < 4 || given < 6 {
		t.Fatalf("%d feeds fetched and %d given back; want some of each", len(fetched), given)
	}
	if counted := giveBacksCounted(t, m, "host_busy", "lease_short"); int(counted) != given {
		t.Errorf("feedmail_poll_givebacks_total{why=host_busy|lease_short} = %v, want the %d feeds given back", counted, given)
	}
}

// giveBacksCounted sums feedmail_poll_givebacks_total over whys.
func giveBacksCounted(t *testing.T, m *metrics.Metrics, whys ...string) float64 {
	t.Helper()
	var sum float64
	for _, why := range whys {
		var d dto.Metric
		if err := m.PollGiveBacks.WithLabelValues(why).Write(&d); err != nil {
			t.Fatal(err)
		}
		sum += d.GetCounter().GetValue()
	}
	return sum
}
