package poller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/poller"
)

func TestGoneEndsSubscriptionsAndStopsPolling(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{Status: 410})
	f := wkFollow(t, s, ff.URL(), 2, 1)
	p := wkPoller(t, s, clk, "w", nil)
	if n, err := p.PollDue(ctx); err != nil || n != 1 {
		t.Fatalf("poll: %d %v", n, err)
	}
	got := wkFeed(t, s, f.ID)
	if got.State != store.FeedGone || got.SubscriberCount != 0 || !strings.HasPrefix(got.PollReason, "410 Gone: polling stopped") {
		t.Fatalf("after 410: state %s, %d subscribers, reason %q", got.State, got.SubscriberCount, got.PollReason)
	}
	if n := wkCount(t, s, "subscriptions", "feed_id = ? AND state <> ?", f.ID, store.SubEnded); n != 0 {
		t.Fatalf("%d subscriptions not ended", n)
	}
	var notices []store.OutboxRow
	if err := s.DB.Where("kind = ?", store.KindNotice).Order("user_id").Find(&notices).Error; err != nil {
		t.Fatal(err)
	}
	if len(notices) != 3 {
		t.Fatalf("%d notices, want 3", len(notices))
	}
	for _, n := range notices {
		if n.DedupeKey != fmt.Sprintf("gone:%d:%d", f.ID, n.UserID) || n.Credits != 0 {
			t.Errorf("notice %q credits %d", n.DedupeKey, n.Credits)
		}
		body, err := store.NoticeOf(&n)
		if err != nil || !strings.Contains(body.Text, "410 Gone") {
			t.Errorf("notice text %q (%v)", body.Text, err)
		}
	}
	clk.Advance(72 * time.Hour)
	if n, err := p.PollDue(ctx); err != nil || n != 0 {
		t.Fatalf("a gone feed was claimed again: %d %v", n, err)
	}
	if len(ff.Requests()) != 1 {
		t.Fatalf("%d requests to a 410 feed", len(ff.Requests()))
	}
}

func TestBlacklistAfterNinetyDaysAndRevivalByPing(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{Status: 500, ETag: farm.ETagStrong})
	f := wkFollow(t, s, ff.URL(), 2, 0)
	since := wkT0.Add(-91 * 24 * time.Hour)
	if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{
		"consecutive_errors": 60, "errors_since": since, "primed_at": since, "last_error": "500 Internal Server Error"}).Error; err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "w", nil)
	if _, err := p.PollDue(ctx); err != nil {
		t.Fatal(err)
	}
	got := wkFeed(t, s, f.ID)
	if got.State != store.FeedBlacklisted || !strings.HasPrefix(got.PollReason, "blacklisted after 91 days") {
		t.Fatalf("state %s reason %q", got.State, got.PollReason)
	}
	if n := wkCount(t, s, "outbox", "kind = ? AND dedupe_key LIKE ?", store.KindNotice, "blacklisted:%"); n != 2 {
		t.Fatalf("%d blacklist notices, want 2", n)
	}
	if got.SubscriberCount != 2 {
		t.Fatalf("blacklisting ended subscriptions: %d left", got.SubscriberCount)
	}
	clk.Advance(48 * time.Hour)
	if n, _ := p.PollDue(ctx); n != 0 {
		t.Fatal("a blacklisted feed was polled on schedule")
	}
	// The publisher fixes the feed and pings: a successful poll lifts the
	// blacklist.
	ff.SetStatus(0)
	rep, err := p.PollFeed(ctx, f.ID, "ping")
	if err != nil {
		t.Fatal(err)
	}
	got = wkFeed(t, s, f.ID)
	if rep.State != store.FeedActive || got.State != store.FeedActive || got.ConsecutiveErrors != 0 || got.ErrorsSince != nil || got.ETag != ff.ETag() {
		t.Fatalf("after revival: report %s, feed %+v", rep.State, got)
	}
}

func TestPermanentRedirectMovesOrMerges(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	p := wkPoller(t, s, clk, "w", nil)

	// 301 to a URL no feed has: the feed's URL changes.
	dest := fm.AddFeed(farm.Spec{ItemCount: 2, ETag: farm.ETagStrong})
	moved := fm.AddFeed(farm.Spec{RedirectTo: dest.URL(), RedirectStatus: 301})
	f := wkFollow(t, s, moved.URL(), 1, 0)
	rep, err := p.PollFeed(ctx, f.ID, "manual")
	if err != nil {
		t.Fatal(err)
	}
	got := wkFeed(t, s, f.ID)
	if got.URL != dest.URL() || rep.MovedTo != dest.URL() || got.ValidatorURL != dest.URL() || got.ETag != dest.ETag() {
		t.Fatalf("after 301: url %s validator url %s etag %q", got.URL, got.ValidatorURL, got.ETag)
	}
	clk.Advance(time.Hour)
	if _, err := p.PollFeed(ctx, f.ID, "manual"); err != nil {
		t.Fatal(err)
	}
	if len(moved.Requests()) != 1 {
		t.Fatalf("the old URL was asked %d times", len(moved.Requests()))
	}
	if r := dest.Requests(); len(r) != 2 || r[1].IfNoneMatch != dest.ETag() || r[1].Status != 304 {
		t.Fatalf("new URL not polled conditionally: %+v", r)
	}

	// 308 to the URL of a feed that exists: merged into it.
	other := fm.AddFeed(farm.Spec{RedirectTo: dest.URL(), RedirectStatus: 308})
	g := wkFollow(t, s, other.URL(), 2, 0)
	rep, err = p.PollFeed(ctx, g.ID, "manual")
	if err != nil {
		t.Fatal(err)
	}
	gone := wkFeed(t, s, g.ID)
	target := wkFeed(t, s, f.ID)
	if gone.State != store.FeedMerged || rep.MergedInto != f.ID || gone.SubscriberCount != 0 || target.SubscriberCount != 3 {
		t.Fatalf("merge: state %s into %d, counts %d → %d", gone.State, rep.MergedInto, gone.SubscriberCount, target.SubscriberCount)
	}
	if !target.NextPollAt.Equal(clk.Now()) {
		t.Fatalf("merge target not due now: %v", target.NextPollAt)
	}
}

func TestTemporaryRedirectKeepsURLValidatorsPerFinalURL(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	p := wkPoller(t, s, clk, "w", nil)
	dest := fm.AddFeed(farm.Spec{ItemCount: 2, ETag: farm.ETagStrong, LastModified: true})
	hop := fm.AddFeed(farm.Spec{RedirectTo: dest.URL(), RedirectStatus: 307})
	f := wkFollow(t, s, hop.URL(), 1, 0)
	if _, err := p.PollFeed(ctx, f.ID, "manual"); err != nil {
		t.Fatal(err)
	}
	got := wkFeed(t, s, f.ID)
	if got.URL != hop.URL() || got.ValidatorURL != dest.URL() || got.ETag != dest.ETag() {
		t.Fatalf("after 307: url %s validator url %s", got.URL, got.ValidatorURL)
	}
	clk.Advance(time.Hour)
	rep, err := p.PollFeed(ctx, f.ID, "manual")
	if err != nil {
		t.Fatal(err)
	}
	if h := hop.Requests(); len(h) != 2 || h[1].IfNoneMatch != "" || h[1].IfModifiedSince != "" {
		t.Fatalf("validators sent to the redirecting URL: %+v", h)
	}
	if d := dest.Requests(); d[1].IfNoneMatch != dest.ETag() || d[1].Status != 304 || rep.Status != 304 || rep.FinalURL != dest.URL() {
		t.Fatalf("final URL not asked conditionally: %+v / report %+v", d[1], rep)
	}
}

// A 429 backs the whole host off, for every process: another poller on the
// same database does not ask the host anything until the back-off ends, and
// the feeds it claimed meanwhile are due when it ends.
func TestRateLimitBacksOffHostAcrossProcesses(t *testing.T) {
	clk := clock.NewFake(wkT0)
	dsn := storetest.FreshDSN(t, storetest.URL())
	s1 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	s2 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	ctx := context.Background()
	fm, err := farm.Listen(clk, "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Close)
	limited := fm.AddFeed(farm.Spec{Status: 429, RetryAfter: "3600"})
	healthy := fm.AddFeed(farm.Spec{ETag: farm.ETagStrong})
	lf := wkFollow(t, s1, limited.URL(), 1, 0)
	hf := wkFollow(t, s1, healthy.URL(), 1, 0)
	// Only the limited feed is due for the first process.
	if err := s1.DB.Model(&store.Feed{}).Where("id = ?", hf.ID).Update("next_poll_at", wkT0.Add(time.Minute)).Error; err != nil {
		t.Fatal(err)
	}
	p1 := wkPoller(t, s1, clk, "one", nil)
	p2 := wkPoller(t, s2, clk, "two", nil)
	if n, err := p1.PollDue(ctx); err != nil || n != 1 {
		t.Fatalf("p1: %d %v", n, err)
	}
	if got := wkFeed(t, s1, lf.ID); got.PollReason != "429: Retry-After 3600 s (1st consecutive error)" {
		t.Fatalf("reason %q", got.PollReason)
	}
	clk.Advance(2 * time.Minute)
	if n, err := p2.PollDue(ctx); err != nil || n != 1 {
		t.Fatalf("p2: %d %v", n, err)
	}
	if len(healthy.Requests()) != 0 {
		t.Fatal("the other process asked a backed-off host")
	}
	got := wkFeed(t, s2, hf.ID)
	if got.NextPollAt.Before(wkT0.Add(time.Hour)) || !strings.Contains(got.PollReason, "backed off") || got.LeaseOwner != "" {
		t.Fatalf("deferred feed: next %v reason %q lease %q", got.NextPollAt, got.PollReason, got.LeaseOwner)
	}
	clk.Set(got.NextPollAt)
	if n, err := p2.PollDue(ctx); err != nil || n != 1 || len(healthy.Requests()) != 1 {
		t.Fatalf("after the back-off: %d polled, %d requests, %v", n, len(healthy.Requests()), err)
	}
}

func TestOperatorMinimumIntervalForHost(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{ETag: farm.ETagStrong})
	f := wkFollow(t, s, ff.URL(), 1, 0)
	if err := s.SetHostMinInterval(ctx, store.HostOf(ff.URL()), 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "w", nil)
	if _, err := p.PollDue(ctx); err != nil {
		t.Fatal(err)
	}
	got := wkFeed(t, s, f.ID)
	if d := got.NextPollAt.Sub(wkT0); d < 2*time.Hour || !strings.Contains(got.PollReason, "operator") {
		t.Fatalf("next poll in %v, reason %q", d, got.PollReason)
	}
}

func TestIngestPushedContent(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{ItemCount: 3, ETag: farm.ETagStrong, Format: farm.Atom})
	f := wkFollow(t, s, ff.URL(), 2, 1)
	m := metrics.New()
	var events []poller.PollEvent
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) {
		c.Metrics = m
		c.AfterPoll = func(_ context.Context, ev poller.PollEvent) { events = append(events, ev) }
	})
	if _, err := p.PollDue(ctx); err != nil {
		t.Fatal(err)
	}
	before := wkFeed(t, s, f.ID)
	clk.Advance(time.Minute)
	ff.Publish()
	rep, err := p.Ingest(ctx, f.ID, ff.Body(), farm.Atom.ContentType())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.NewItems) != 1 || rep.Emails != 2 || rep.DigestItems != 1 || rep.Outcome != "pushed" {
		t.Fatalf("report %+v", rep)
	}
	after := wkFeed(t, s, f.ID)
	if after.ETag != before.ETag || !after.NextPollAt.Equal(before.NextPollAt) || after.BodyHash != before.BodyHash ||
		after.LastNewItemAt == nil || !after.LastNewItemAt.Equal(clk.Now()) {
		t.Fatalf("ingest changed the poll state:\n before %+v\n after  %+v", before, after)
	}
	// The same push again: nothing new. Junk: an error, nothing written.
	if rep, err := p.Ingest(ctx, f.ID, ff.Body(), ""); err != nil || len(rep.NewItems) != 0 || rep.Emails != 0 {
		t.Fatalf("replayed push: %+v %v", rep, err)
	}
	if _, err := p.Ingest(ctx, f.ID, []byte("<html><body>hi</body></html>"), "text/html"); err == nil {
		t.Fatal("an HTML push was accepted")
	}
	if n := wkCount(t, s, "outbox", "1 = 1"); n != 2 {
		t.Fatalf("%d emails", n)
	}
	if len(events) != 3 || events[0].Parsed == nil || events[1].Report.Outcome != "pushed" {
		t.Fatalf("%d AfterPoll events", len(events))
	}
	if v := counterValue(t, m.Items.WithLabelValues("first_poll", "")); v != 3 {
		t.Fatalf("first_poll items metric %v", v)
	}
	if v := counterValue(t, m.Items.WithLabelValues("new", "")); v != 1 {
		t.Fatalf("new items metric %v", v)
	}
	if v := counterValue(t, m.Polls.WithLabelValues("ok", "200")); v != 1 {
		t.Fatalf("polls metric %v", v)
	}
}

func TestPollFeedBusyAndUnknown(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{})
	f := wkFollow(t, s, ff.URL(), 1, 0)
	if _, err := s.ClaimFeedForPoll(ctx, f.ID, "someone-else", time.Minute, clk.Now()); err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "w", nil)
	if _, err := p.PollFeed(ctx, f.ID, "manual"); !errors.Is(err, poller.ErrBusy) {
		t.Fatalf("busy feed: %v", err)
	}
	if _, err := p.PollFeed(ctx, 9999, "manual"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown feed: %v", err)
	}
	if len(ff.Requests()) != 0 {
		t.Fatal("a busy feed was fetched")
	}
}

// Run spreads overdue feeds instead of firing them at once, then polls each
// when it comes due.
func TestRunSpreadsOverdueFeeds(t *testing.T) {
	clk := clock.NewFake(wkT0.Add(-time.Hour))
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	var urls []string
	for range 30 {
		urls = append(urls, fm.AddFeed(farm.Spec{ETag: farm.ETagStrong}).URL())
	}
	wkBulkFollow(t, s, urls, nil, clk.Now())
	// Polled before an hour of downtime (a first poll is not spread:
	// TestRunPollsNewFeedsAtOnce).
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ?", clk.Now().Add(-time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	clk.Set(wkT0)
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) { c.IdleWait = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// Run spread the 30 feeds over 10 minutes: at most a couple are due at
	// once.
	waitFor(t, func() bool { return wkCount(t, s, "feeds", "next_poll_at > ?", wkT0.Add(-time.Minute)) == 30 }, "spread")
	if n := len(fm.Requests()); n > 3 {
		t.Fatalf("%d feeds fired at start", n)
	}
	clk.Advance(10 * time.Minute)
	waitFor(t, func() bool { return len(fm.Requests()) == 30 && wkCount(t, s, "feeds", "lease_owner <> ''") == 0 }, "all polled")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

// Feeds never polled (an import before serve started) are not spread:
// Run polls them all in its first pass, as fast as the per-host limits
// allow, and their next polls are spread over an interval after it.
func TestRunPollsNewFeedsAtOnce(t *testing.T) {
	clk := clock.NewFake(wkT0.Add(-time.Hour))
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	var urls []string
	for range 60 {
		urls = append(urls, fm.AddFeed(farm.Spec{ETag: farm.ETagStrong, CacheControl: "max-age=300"}).URL())
	}
	wkBulkFollow(t, s, urls, nil, clk.Now())
	clk.Set(wkT0) // imported an hour before the poller started
	p := wkPoller(t, s, clk, "w", func(c *poller.Config) { c.IdleWait = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor(t, func() bool {
		return len(fm.Requests()) == 60 && wkCount(t, s, "feeds", "last_polled_at IS NOT NULL") == 60
	},
		"every new feed polled with the clock still at the start")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	// The next polls: between one and two intervals on, not bunched.
	var feeds []store.Feed
	if err := s.DB.Find(&feeds).Error; err != nil {
		t.Fatal(err)
	}
	perMinute := map[int]int{}
	for _, f := range feeds {
		d := f.NextPollAt.Sub(wkT0)
		if d < 5*time.Minute || d >= 10*time.Minute {
			t.Fatalf("feed %d next poll in %v (%s), want in [5m, 10m)", f.ID, d, f.PollReason)
		}
		perMinute[int(d/time.Minute)]++
	}
	if len(perMinute) < 4 {
		t.Errorf("next polls fall in %d minutes of the five after the interval: %v", len(perMinute), perMinute)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, cond, what)
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	return metricOf(t, c).GetCounter().GetValue()
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	return metricOf(t, g).GetGauge().GetValue()
}

func metricOf(t *testing.T, c prometheus.Metric) *dto.Metric {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return &m
}
