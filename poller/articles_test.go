package poller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/articletest"
)

// pageHost serves article pages and counts the requests per path; a path
// in status answers that status with Retry-After: 600.
type pageHost struct {
	*httptest.Server
	mu     sync.Mutex
	hits   map[string]int
	status map[string]int
}

func newPageHost(t *testing.T) *pageHost {
	h := &pageHost{hits: map[string]int{}, status: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.hits[r.URL.Path]++
		code := h.status[r.URL.Path]
		h.mu.Unlock()
		switch {
		case r.URL.Path == "/robots.txt":
			w.Write([]byte("User-agent: *\nAllow: /\n"))
		case code != 0:
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(code)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(articletest.Page("A post")))
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *pageHost) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

// wantArticle stores an item of feed linking to link and asks for its
// article, as the outbox does.
func wantArticle(t *testing.T, s *store.Store, feed *store.Feed, link string, seen time.Time) int64 {
	t.Helper()
	it := store.Item{FeedID: feed.ID, Identity: link, Link: link, Title: "t", SeenAt: seen}
	if err := s.DB.Create(&it).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.WantArticles(context.Background(), []int64{it.ID}); err != nil {
		t.Fatal(err)
	}
	return it.ID
}

func articleOf(t *testing.T, s *store.Store, id int64) store.ItemArticle {
	t.Helper()
	m, err := s.ItemArticles(context.Background(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	return m[id]
}

// TestArticleFetchesArePolite: pages are fetched once each, after one
// robots.txt for the host; a page that answers 429 backs the whole host
// off for every process (hosts table), and the next page of that host
// waits for the back-off to end, unasked, or is given up when the
// back-off outlasts the email's wait; a page past the wait is not
// fetched at all; nothing pending costs one query.
func TestArticleFetchesArePolite(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	p := wkPoller(t, s, clk, "articles-1", nil)
	r := article.NewReader(fetcher.Config{BaseURL: wkBase, AllowPrivate: true, Timeout: 5 * time.Second}, clk)
	ctx := context.Background()
	h := newPageHost(t)
	feed := wkFollow(t, s, h.URL+"/feed.xml", 1, 0)

	if n, err := p.FetchArticles(ctx, r); n != 0 || err != nil {
		t.Fatalf("FetchArticles with nothing pending = %d, %v", n, err)
	}
	a, b := wantArticle(t, s, feed, h.URL+"/a", clk.Now()), wantArticle(t, s, feed, h.URL+"/b", clk.Now())
	if n, err := p.FetchArticles(ctx, r); n != 2 || err != nil {
		t.Fatalf("FetchArticles = %d, %v; want both pages", n, err)
	}
	if got := articleOf(t, s, a); got.State != store.ArticleReady || !strings.Contains(got.HTML, articletest.Paragraphs[0]) {
		t.Fatalf("article a = %+v", got)
	}
	if h.count("/robots.txt") != 1 || h.count("/a") != 1 || h.count("/b") != 1 {
		t.Fatalf("requests %v: want one robots.txt and one fetch per page", h.hits)
	}
	if got := articleOf(t, s, b); got.State != store.ArticleReady || got.URL != h.URL+"/b" {
		t.Fatalf("article b = %+v", got)
	}
	// A relative link resolves against the feed's address.
	rel := wantArticle(t, s, feed, "/relative", clk.Now())
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, rel); got.State != store.ArticleReady || h.count("/relative") != 1 {
		t.Fatalf("article of a relative link = %+v", got)
	}

	// 429 with Retry-After: 600 backs the host off for ten minutes.
	h.mu.Lock()
	h.status["/limited"] = http.StatusTooManyRequests
	h.mu.Unlock()
	limited := wantArticle(t, s, feed, h.URL+"/limited", clk.Now())
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, limited); got.State != store.ArticleFailed || !strings.Contains(got.Reason, "429") {
		t.Fatalf("article of the 429 page = %+v", got)
	}
	hosts, err := s.Hosts(ctx, []string{store.HostOf(h.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if hb := hosts[store.HostOf(h.URL)].BackoffUntil; hb == nil || hb.Before(clk.Now().Add(9*time.Minute)) {
		t.Fatalf("host back-off after a 429 with Retry-After 600 = %v, want ten minutes from %v", hb, clk.Now())
	}
	// A page of that host found now waits longer than an email may: given
	// up unasked.
	later := wantArticle(t, s, feed, h.URL+"/later", clk.Now())
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, later); got.State != store.ArticleFailed || h.count("/later") != 0 {
		t.Fatalf("page of a backed-off host: %+v after %d requests, want failed unasked", got, h.count("/later"))
	}

	// Past the wait, a page is not fetched at all.
	clk.Advance(11 * time.Minute)
	stale := wantArticle(t, s, feed, h.URL+"/stale", clk.Now())
	clk.Advance(article.Wait)
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, stale); got.State != store.ArticleFailed || h.count("/stale") != 0 {
		t.Fatalf("page past the wait: %+v after %d requests, want failed unasked", got, h.count("/stale"))
	}
}

// TestArticleWaitsForAShortBackOff: a host backed off for less than the
// wait is asked once the back-off ends, not before.
func TestArticleWaitsForAShortBackOff(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	p := wkPoller(t, s, clk, "articles-2", nil)
	r := article.NewReader(fetcher.Config{BaseURL: wkBase, AllowPrivate: true, Timeout: 5 * time.Second}, clk)
	ctx := context.Background()
	h := newPageHost(t)
	feed := wkFollow(t, s, h.URL+"/feed.xml", 1, 0)
	if err := s.BackOffHost(ctx, store.HostOf(h.URL), clk.Now().Add(time.Minute), "test"); err != nil {
		t.Fatal(err)
	}
	id := wantArticle(t, s, feed, h.URL+"/a", clk.Now())
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, id); got.State != store.ArticlePending || h.count("/a") != 0 || !got.NextTryAt.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("during the back-off: %+v after %d requests, want pending until the back-off ends", got, h.count("/a"))
	}
	if n, _ := p.FetchArticles(ctx, r); n != 0 {
		t.Fatalf("claimed %d articles before their time", n)
	}
	clk.Advance(time.Minute)
	if _, err := p.FetchArticles(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := articleOf(t, s, id); got.State != store.ArticleReady || h.count("/a") != 1 {
		t.Fatalf("after the back-off: %+v after %d requests", got, h.count("/a"))
	}
}
