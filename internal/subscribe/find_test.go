package subscribe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
)

// TestFindTypedFallsBackToHTTP: a site typed without a scheme is tried over
// https first and, when nothing answers there, over plain http; an address
// typed with https:// is taken at its word.
func TestFindTypedFallsBackToHTTP(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Plain HTTP blog</title><item><guid>a</guid></item></channel></rss>`)
	}))
	t.Cleanup(ts.Close)
	s := newService(t)
	s.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	ctx := context.Background()
	hostPath := strings.TrimPrefix(ts.URL, "http://") + "/feed"

	found, err := s.FindTyped(ctx, hostPath, nil)
	if err != nil || found.URL != "http://"+hostPath || found.Title != "Plain HTTP blog" {
		t.Fatalf("typed %q: %+v, %v; want the feed over http", hostPath, found, err)
	}
	if _, err := s.FindTyped(ctx, "https://"+hostPath, nil); err == nil {
		t.Fatalf("typed with https:// it was found anyway")
	}
	if _, err := s.FindTyped(ctx, "not a web address", nil); err == nil {
		t.Fatal("a non-address was accepted")
	}
}

// rssDaily is an RSS feed of n items, one a day at 09:00 up to last.
func rssDaily(title string, last time.Time, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?><rss version="2.0"><channel><title>%s</title>`, title)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `<item><guid>i%d</guid><pubDate>%s</pubDate></item>`, i, last.AddDate(0, 0, -i).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// TestFindFeedForecast: a fetched feed is forecast from its document's
// dates; a known feed polled lately from its stored items, unfetched.
func TestFindFeedForecast(t *testing.T) {
	s := newService(t)
	s.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	ctx := context.Background()
	now := s.Clock.Now()
	body := rssDaily("Daily", now.Add(-time.Hour), 10)
	var fetches atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(ts.Close)

	found, err := s.FindFeed(ctx, ts.URL+"/daily", nil)
	if err != nil {
		t.Fatal(err)
	}
	// 9 posts after the oldest in 9 days and an hour: about 30 a month.
	fc := found.Forecast
	if fc.NotEnoughHistory || fc.Instant.Credits != 30 || fc.Words("daily") != "about 30 credits a month" {
		t.Fatalf("fetched forecast %+v; want about 30 a month instant and daily", fc)
	}

	body = rssDaily("Two posts", now.Add(-time.Hour), 2)
	found, err = s.FindFeed(ctx, ts.URL+"/two", nil)
	if err != nil || !found.Forecast.NotEnoughHistory {
		t.Fatalf("two dated posts: %+v, %v; want not enough history", found.Forecast, err)
	}

	// Known and polled an hour ago: 20 stored weekly posts, no fetch.
	f, _, err := s.Store.EnsureFeed(ctx, ts.URL+"/known")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		pub := now.Add(-time.Duration(i) * 7 * 24 * time.Hour).Add(-2 * time.Hour)
		it := store.Item{FeedID: f.ID, Identity: fmt.Sprint("k", i), PublishedAt: &pub, SeenAt: now}
		if err := s.Store.DB.Create(&it).Error; err != nil {
			t.Fatal(err)
		}
	}
	polled := now.Add(-time.Hour)
	if err := s.Store.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("last_success_at", polled).Error; err != nil {
		t.Fatal(err)
	}
	before := fetches.Load()
	found, err = s.FindFeed(ctx, ts.URL+"/known", nil)
	if err != nil {
		t.Fatal(err)
	}
	if fetches.Load() != before {
		t.Error("a known feed was fetched")
	}
	if fc := found.Forecast; fc.NotEnoughHistory || fc.Instant.Credits != 4 || fc.Words("weekly") != "about 4 credits a month" {
		t.Errorf("stored forecast %+v; want about 4 a month", fc)
	}
}
