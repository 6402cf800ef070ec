package subscribe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
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

	found, err := s.FindTyped(ctx, hostPath)
	if err != nil || found.URL != "http://"+hostPath || found.Title != "Plain HTTP blog" {
		t.Fatalf("typed %q: %+v, %v; want the feed over http", hostPath, found, err)
	}
	if _, err := s.FindTyped(ctx, "https://"+hostPath); err == nil {
		t.Fatalf("typed with https:// it was found anyway")
	}
	if _, err := s.FindTyped(ctx, "not a web address"); err == nil {
		t.Fatal("a non-address was accepted")
	}
}
