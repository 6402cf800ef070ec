package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

// storeItems stores n items of feedURL's feed with content.
func (h *harness) storeItems(feedURL string, n int, content string) {
	h.t.Helper()
	f, err := h.st.FeedByURL(context.Background(), feedURL)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range n {
		it := store.Item{FeedID: f.ID, Identity: fmt.Sprintf("teaser-%d", i), Link: fmt.Sprintf("https://example.org/p/%d", i),
			Title: "Teaser", Content: content, SeenAt: h.clk.Now()}
		if err := h.st.DB.Create(&it).Error; err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestCutShortFeedSuggestsArticle: a feed whose stored posts are teasers
// is marked on its status page and its landing form picks the article
// format; a feed of whole posts is neither; the format chosen on the form
// is the subscription's.
func TestCutShortFeedSuggestsArticle(t *testing.T) {
	h := newHarness(t)
	teasers, whole := h.feed("Teasers"), h.feed("Whole posts")
	h.subscribeConfirmed("reader@example.com", teasers.URL(), "instant")
	h.subscribeConfirmed("reader@example.com", whole.URL(), "instant")
	h.storeItems(teasers.URL(), 4, `<p>The first two sentences of the post… <a href="/p">Read more</a></p>`)
	h.storeItems(whole.URL(), 4, "<p>"+strings.Repeat("A whole post, every word of it. ", 80)+"</p>")

	for _, tc := range []struct {
		feed string
		cut  bool
	}{{teasers.URL(), true}, {whole.URL(), false}} {
		status := h.get("/feeds/status?url=" + url.QueryEscape(tc.feed)).Body.String()
		if got := strings.Contains(status, "Cut short: 4 of its 4 newest posts look cut short"); got != tc.cut {
			t.Errorf("status page of %s marks it cut short: %v, want %v", tc.feed, got, tc.cut)
		}
		landing := h.get("/subscribe?url=" + url.QueryEscape(tc.feed)).Body.String()
		picked := strings.Contains(landing, `<option value="article" selected>`)
		if picked != tc.cut || strings.Contains(landing, "Suggested for this feed") != tc.cut {
			t.Errorf("landing form of %s suggests article: %v, want %v", tc.feed, picked, tc.cut)
		}
	}

	// Signing up for the whole posts of a cut-short feed: the inbox page
	// says the article format exists.
	for _, tc := range []struct {
		feed, format string
		hint         bool
	}{{teasers.URL(), "full", true}, {whole.URL(), "full", false}} {
		w := h.post("/subscriptions", url.Values{"email": {"other@example.com"}, "url": {tc.feed}, "delivery": {"instant"},
			"zone": {"UTC"}, "format": {tc.format}})
		if got := strings.Contains(w.Body.String(), `id="cut-short"`); w.Code != http.StatusOK || got != tc.hint {
			t.Errorf("signup for %s in %s: %d, hint %v, want %v", tc.feed, tc.format, w.Code, got, tc.hint)
		}
	}
	w := h.post("/subscriptions", url.Values{"email": {"new@example.com"}, "url": {teasers.URL()}, "delivery": {"instant"},
		"zone": {"UTC"}, "format": {"article"}})
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `id="cut-short"`) {
		t.Fatalf("signup with the article format: %d (and no hint wanted)\n%s", w.Code, w.Body.String())
	}
	u, err := h.st.UserByEmail(context.Background(), "new@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if subs := h.subsOf(u); len(subs) != 1 || subs[0].Format != store.FormatArticle {
		t.Fatalf("subscriptions after signing up for the article format: %+v", subs)
	}
	w = h.post("/subscriptions", url.Values{"email": {"odd@example.com"}, "url": {teasers.URL()}, "delivery": {"instant"},
		"zone": {"UTC"}, "format": {"everything"}})
	if w.Code != http.StatusUnprocessableEntity || fieldErrors(w.Body.String())["format"] == "" {
		t.Fatalf("an unknown format: %d, errors %v", w.Code, fieldErrors(w.Body.String()))
	}
}
