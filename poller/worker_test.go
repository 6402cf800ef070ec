package poller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/clock"
	"github.com/feedmail/feedmail/farm"
	"github.com/feedmail/feedmail/poller"
	"github.com/feedmail/feedmail/store"
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
	// fast + ETag + Last-Modified: 5 min default, up to 10 % jitter.
	if d := got.NextPollAt.Sub(wkT0); d < 5*time.Minute || d > 5*time.Minute+30*time.Second {
		t.Fatalf("next poll in %v (%s)", d, got.PollReason)
	}

	// Nothing due yet.
	if n, err := p.PollDue(ctx); err != nil || n != 0 {
		t.Fatalf("early pass polled %d (%v)", n, err)
	}
	clk.Advance(6 * time.Minute)
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
