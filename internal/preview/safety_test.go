package preview_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/poller"
)

// everyChoice previews feed in every format, instantly and in each
// digest preset, and fails the test on an error.
func everyChoice(t *testing.T, svc *preview.Service, feed, client string) {
	t.Helper()
	for _, d := range []string{"instant", "daily", "weekly", "twice-daily", "@every 1h"} {
		for _, f := range []string{store.FormatFull, store.FormatSummary, store.FormatTitle, store.FormatArticle} {
			res, err := svc.Preview(context.Background(), preview.Request{Feed: feed, Format: f, Delivery: d, Zone: "Asia/Tokyo", Client: client})
			if err != nil {
				t.Fatalf("preview %s %s: %v", f, d, err)
			}
			if res.Subject == "" || res.HTML == "" || res.Text == "" || res.Forecast.Words == "" {
				t.Fatalf("preview %s %s is incomplete: %+v", f, d, res)
			}
		}
	}
}

// counts are the rows of everything a reader could be charged for, and
// of what would make a feed polled.
func counts(t *testing.T, st *store.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, model := range map[string]any{"users": &store.User{}, "subscriptions": &store.Subscription{},
		"outbox": &store.OutboxRow{}, "ledger": &store.LedgerEntry{}, "feeds": &store.Feed{}, "digests": &store.Digest{},
		"digest items": &store.DigestItem{}, "items": &store.Item{}} {
		var n int64
		if err := st.DB.Model(model).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// TestPreviewStoresNothing: previews of a feed feedmail has never seen,
// in every format and delivery, send nothing and leave no row behind: no
// person, subscription, outbox email, ledger entry, digest, item, nor
// the feed itself (which would make it polled).
func TestPreviewStoresNothing(t *testing.T) {
	w := newWorld(t, preview.Limits{})
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)}, post{2, t0.Add(-2 * time.Hour), body(2)})
	everyChoice(t, w.svc, site.feedURL(), "203.0.113.9")
	everyChoice(t, w.svc, site.srv.URL+"/", "203.0.113.9") // the site's address: its feed is found
	for name, n := range counts(t, w.st) {
		if n != 0 {
			t.Errorf("previews left %d rows of %s", n, name)
		}
	}
}

// TestPreviewReusesARecentPoll: the previews of a feed within the reuse
// period make one request to it whatever their number and choices; after
// it, one more. A feed the poller polled lately is not fetched at all.
func TestPreviewReusesARecentPoll(t *testing.T) {
	w := newWorld(t, preview.Limits{})
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)}, post{2, t0.Add(-2 * time.Hour), body(2)})
	everyChoice(t, w.svc, site.feedURL(), "a")
	everyChoice(t, w.svc, site.feedURL(), "b")
	if n := site.feedHits.Load(); n != 1 {
		t.Fatalf("40 previews fetched the feed %d times, want 1", n)
	}
	w.clk.Advance(preview.DefaultReuse + time.Second)
	everyChoice(t, w.svc, site.feedURL(), "a")
	if n := site.feedHits.Load(); n != 2 {
		t.Fatalf("after the reuse period the feed was fetched %d times in all, want 2", n)
	}

	polled := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)})
	ctx := context.Background()
	f, _, err := w.st.EnsureFeed(ctx, polled.feedURL())
	if err != nil {
		t.Fatal(err)
	}
	pl, err := poller.New(poller.Config{Store: w.st, Owner: "p1", Clock: w.clk, Fetch: fetcher.Config{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pl.Close)
	if _, err := pl.PollFeed(ctx, f.ID, "test"); err != nil {
		t.Fatal(err)
	}
	everyChoice(t, w.svc, polled.feedURL(), "a")
	if n := polled.feedHits.Load(); n != 1 {
		t.Fatalf("a feed polled lately was fetched %d times (the poll included), want only the poll's", n)
	}
}

// TestPreviewRateLimits: past its burst a client is refused (a
// *LimitError saying when to come back) while another is not; past the
// feed's burst everyone is refused for that feed, not for another.
func TestPreviewRateLimits(t *testing.T) {
	w := newWorld(t, preview.Limits{PerClient: preview.Limit{Every: time.Minute, Burst: 3},
		PerFeed: preview.Limit{Every: time.Minute, Burst: 5}})
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)})
	other := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)})
	ask := func(feed, client string) error {
		_, err := w.svc.Preview(context.Background(), preview.Request{Feed: feed, Client: client})
		return err
	}
	limited := func(err error) bool {
		var le *preview.LimitError
		return errors.As(err, &le) && le.Wait > 0
	}
	for i := range 3 {
		if err := ask(site.feedURL(), "a"); err != nil {
			t.Fatalf("preview %d of client a: %v", i+1, err)
		}
	}
	if err := ask(site.feedURL(), "a"); !limited(err) {
		t.Fatalf("the 4th preview of client a: %v, want a LimitError", err)
	}
	for i := range 2 {
		if err := ask(site.feedURL(), "b"); err != nil {
			t.Fatalf("preview %d of client b: %v", i+1, err)
		}
	}
	if err := ask(site.feedURL(), "c"); !limited(err) {
		t.Fatalf("the 6th preview of the feed: %v, want a LimitError", err)
	}
	if err := ask(other.feedURL(), "c"); err != nil {
		t.Fatalf("another feed: %v", err)
	}
	w.clk.Advance(time.Minute)
	if err := ask(site.feedURL(), "c"); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
}

// TestPreviewRefusesPrivateNetworks: without FEEDMAIL_ALLOW_PRIVATE_NETWORKS
// a feed on loopback is refused with the words signup uses, and nothing
// reaches it.
func TestPreviewRefusesPrivateNetworks(t *testing.T) {
	w := newWorld(t, preview.Limits{})
	guarded := newWorldOn(t, w.st, w.clk, preview.Limits{}, false)
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)})
	_, err := guarded.svc.Preview(context.Background(), preview.Request{Feed: site.feedURL()})
	var p *preview.Problem
	if !errors.As(err, &p) || p.Field != "feed" {
		t.Fatalf("preview of a loopback feed: %v, want a Problem with the feed", err)
	}
	_, serr := guarded.subs.FindTyped(context.Background(), site.feedURL(), nil)
	var fe subscribe.FieldError
	if !errors.As(serr, &fe) || fe.Msg != p.Msg {
		t.Fatalf("signup says %v, the preview %q", serr, p.Msg)
	}
	if n := site.feedHits.Load(); n != 0 {
		t.Fatalf("the loopback feed got %d requests", n)
	}
}

// TestPreviewsAtOnceShareAFetch: previews of one feed asked at once,
// while its fetch is under way, wait for that fetch instead of making
// their own. The feed holds its answer until a second request comes or
// two seconds pass.
func TestPreviewsAtOnceShareAFetch(t *testing.T) {
	w := newWorld(t, preview.Limits{})
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)})
	site.gate = func() {
		deadline := time.Now().Add(2 * time.Second)
		for site.feedHits.Load() < 2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for i := range 5 {
		wg.Go(func() {
			_, err := w.svc.Preview(context.Background(), preview.Request{Feed: site.feedURL(), Client: strconv.Itoa(i)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := site.feedHits.Load(); n != 1 {
		t.Fatalf("5 previews at once fetched the feed %d times, want 1", n)
	}
}
