package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/mailer"
)

// TestPreviewRoute: GET /api/v1/preview answers the email of the feed's
// newest post, or a digest sample, as openapi.json says; bad choices are
// 400, a feed that cannot be read 422, a burst past the feed's limit
// 429; no subscription is made.
func TestPreviewRoute(t *testing.T) {
	h := newHarness(t, Limit{})
	h.srv.Preview = preview.New(preview.Config{Subs: h.srv.Subs, Sender: mailer.Sender{Address: "feedmail@feedmail.test"},
		Limits: preview.Limits{PerFeed: preview.Limit{Every: time.Hour, Burst: 2}}})
	u, tok := h.user("ann@example.com")
	f := h.farm.AddFeed(farm.Spec{Title: "API Feed", ItemCount: 4})
	get := func(q url.Values) *httptest.ResponseRecorder {
		return h.do(call{method: "GET", path: "/api/v1/preview?" + q.Encode(), token: tok})
	}
	w := get(url.Values{"feed": {f.URL()}, "format": {"title"}, "tz": {"Europe/Paris"}})
	if w.Code != http.StatusOK {
		t.Fatalf("preview: %d %s", w.Code, w.Body.String())
	}
	m := decode(t, w)
	if m["digest"] != false || !strings.Contains(m["subject"].(string), "Item") || !strings.Contains(m["text"].(string), mailer.PreviewAddress) {
		t.Errorf("preview %v", m)
	}
	w = get(url.Values{"feed": {f.URL()}, "delivery": {"weekly"}})
	if m := decode(t, w); w.Code != http.StatusOK || m["digest"] != true || !strings.HasPrefix(m["subject"].(string), "Your Weekly digest") {
		t.Errorf("digest preview: %d %v", w.Code, m)
	}
	if w := get(url.Values{"feed": {f.URL()}, "delivery": {"now and then"}}); w.Code != http.StatusBadRequest || decode(t, w)["field"] != "delivery" {
		t.Errorf("a bad delivery: %d %s", w.Code, w.Body.String())
	}
	gone := h.farm.AddFeed(farm.Spec{Status: http.StatusNotFound})
	if w := get(url.Values{"feed": {gone.URL()}}); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("a missing feed: %d %s", w.Code, w.Body.String())
	}
	if w := get(url.Values{"feed": {f.URL()}}); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("past the feed's burst: %d %v", w.Code, w.Header())
	}
	var n int64
	if err := h.st.DB.Model(&store.Subscription{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d subscriptions, %v", n, err)
	}
}
