package web

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// knownFeed records the feed at u with n stored posts, step apart, the
// newest an hour before the harness's now, polled now (so a signup trusts
// it without fetching).
func (h *harness) knownFeed(u, title string, n int, step time.Duration) {
	h.t.Helper()
	ctx := context.Background()
	f, _, err := h.st.EnsureFeed(ctx, u)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.st.SetFeedMetaIfEmpty(ctx, f.ID, title, ""); err != nil {
		h.t.Fatal(err)
	}
	now := h.clk.Now()
	if err := h.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("last_success_at", now).Error; err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		pub := now.Add(-time.Hour - time.Duration(i)*step)
		it := store.Item{FeedID: f.ID, Identity: fmt.Sprint("p", i), PublishedAt: &pub, SeenAt: now}
		if err := h.st.DB.Create(&it).Error; err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestLandingPageForecast: the landing page of a feed feedmail knows says
// what each delivery would cost, from the stored posts, without fetching.
func TestLandingPageForecast(t *testing.T) {
	h := newHarness(t)
	daily := h.feed("Daily")
	h.knownFeed(daily.URL(), "Daily", 20, 24*time.Hour)
	before := len(daily.Requests())
	b := h.get("/subscribe?url=" + url.QueryEscape(daily.URL())).Body.String()
	// 19 posts in 19 days and an hour: about 30 a month, and every daily
	// issue has one.
	for _, want := range []string{
		"This feed has about 30 posts a month",
		`<label for="d-instant">Each post in its own email, as soon as we see it <span class="muted">1 credit per email</span> <strong class="forecast">about 30 credits a month</strong></label>`,
		`<strong class="forecast">about 30 credits a month</strong></label>`,
		`weekly on Monday at 07:00 <span class="muted">1 credit per 5 feeds with news in it</span> <strong class="forecast">about 4 credits a month</strong>`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the landing page lacks %q:\n%s", want, b)
		}
	}
	if len(daily.Requests()) != before {
		t.Error("the landing page fetched the feed")
	}

	// Known without enough dated posts; unknown: nothing to forecast from.
	h.knownFeed("https://few.example/feed", "Few", 2, 24*time.Hour)
	b = h.get("/subscribe?url=" + url.QueryEscape("https://few.example/feed")).Body.String()
	if !strings.Contains(b, "Not enough history to tell what this feed would cost: fewer than 3 of its posts are dated.") ||
		strings.Contains(b, `class="forecast"`+">about") {
		t.Errorf("a feed with 2 posts: no 'not enough history':\n%s", b)
	}
	// A form sent with a bad address shows the forecast of the feed it
	// found while the person corrects it.
	w := h.post("/subscriptions", url.Values{"email": {"not an address"}, "url": {daily.URL()}, "delivery": {"daily"}})
	if b := w.Body.String(); w.Code != 422 || !strings.Contains(b, "This feed has about 30 posts a month") {
		t.Errorf("form with a bad address: %d, no forecast:\n%s", w.Code, b)
	}
	b = h.get("/subscribe?url=" + url.QueryEscape("https://unknown.example/feed")).Body.String()
	if strings.Contains(b, "forecast") || strings.Contains(b, "credits a month") {
		t.Errorf("an unknown feed has a forecast:\n%s", b)
	}
}

// TestInboxPageForecast: a feed typed on the form and fetched in the same
// POST gets its forecast on "check your inbox", while confirming is still
// to come: the cost of the delivery the person chose.
func TestInboxPageForecast(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Typed")
	h.knownFeed(f.URL(), "Typed", 20, 24*time.Hour)
	for _, c := range []struct{ delivery, want string }{
		{"instant", "about 30 credits a month"},
		{"weekly", "about 4 credits a month"},
	} {
		w := h.post("/subscriptions", url.Values{"email": {c.delivery + "@example.net"}, "url": {f.URL()}, "delivery": {c.delivery}})
		if b := w.Body.String(); w.Code != 200 || !strings.Contains(b, "Check your inbox") ||
			!strings.Contains(b, "the delivery you chose costs <strong>"+c.want+"</strong>") {
			t.Errorf("%s: %d, no forecast on the inbox page:\n%s", c.delivery, w.Code, b)
		}
	}
}

// TestCandidatesForecast: of the feeds a site advertises, those feedmail
// knows show their forecast; the others are not fetched for one.
func TestCandidatesForecast(t *testing.T) {
	h := newHarness(t)
	posts, comments := h.feed("Posts"), h.feed("Comments")
	h.knownFeed(posts.URL(), "Posts", 10, 7*24*time.Hour)
	site := h.farm.AddSite(posts, comments)
	w := h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {site}, "delivery": {"instant"}})
	b := w.Body.String()
	if !strings.Contains(b, "This site has several feeds") {
		t.Fatalf("no candidates page: %d\n%s", w.Code, b)
	}
	// 9 posts in 9 weeks and an hour: about 4 a month.
	want := `about 4 posts a month: each by email about 4 credits a month; daily digest about 4 credits a month; weekly digest about 4 credits a month; twice-daily digest about 4 credits a month`
	if strings.Count(b, want) != 1 || strings.Count(b, "credits a month") != 4 {
		t.Errorf("candidates page: want one forecast %q:\n%s", want, b)
	}
	if n := len(comments.Requests()); n != 0 {
		t.Errorf("an unknown candidate was fetched %d times", n)
	}
}

// TestAccountForecast: each subscription says what it costs a month as
// delivered now; a digest's feeds share its cost.
func TestAccountForecast(t *testing.T) {
	h := newHarness(t)
	h.knownFeed("https://daily.example/feed", "Daily", 20, 24*time.Hour)
	h.knownFeed("https://weekly.example/feed", "Weekly", 10, 7*24*time.Hour)
	h.knownFeed("https://few.example/feed", "Few", 2, 24*time.Hour)
	u := h.subscribeConfirmed("ann@example.com", "https://daily.example/feed", "instant")
	h.subscribeConfirmed("ann@example.com", "https://weekly.example/feed", "daily")
	h.subscribeConfirmed("ann@example.com", "https://few.example/feed", "daily")
	b := h.get(h.accountPath(u)).Body.String()
	// Weekly posts fill 9 daily issues in 63: about 4 a month.
	digestWords := "about 4 credits a month, not counting 1 feed with too little history"
	for _, want := range []string{
		"Cost: about 30 credits a month as delivered now",
		"Cost: digest “Daily” as a whole, as delivered now: " + digestWords,
		"Cost: " + digestWords,
	} {
		if !strings.Contains(b, html.EscapeString(want)) && !strings.Contains(b, want) {
			t.Errorf("the account page lacks %q:\n%s", want, b)
		}
	}
	if n := strings.Count(b, "as a whole"); n != 2 { // the weekly and the few
		t.Errorf("%d digest subscriptions say the digest's cost; want 2", n)
	}
}

// TestAccountForecastFilters: a subscription's forecast counts only the
// posts its filters let through.
func TestAccountForecastFilters(t *testing.T) {
	h := newHarness(t)
	h.knownFeed("https://daily.example/feed", "Daily", 20, 24*time.Hour)
	// Every other post is about Go.
	if err := h.st.DB.Exec(`UPDATE items SET title = 'Go news' WHERE identity IN ('p0','p2','p4','p6','p8','p10','p12','p14','p16','p18')`).Error; err != nil {
		t.Fatal(err)
	}
	u := h.subscribeConfirmed("ann@example.com", "https://daily.example/feed", "instant")
	if b := h.get(h.accountPath(u)).Body.String(); !strings.Contains(b, "Cost: about 30 credits a month as delivered now") {
		t.Fatalf("without filters: no 30 a month:\n%s", b)
	}
	sub := h.subsOf(u)[0]
	inc := "go"
	if _, err := h.st.SetSubscriptionControls(context.Background(), u.ID, sub.ID, store.Controls{Include: &inc}); err != nil {
		t.Fatal(err)
	}
	// 10 of the 19 posts after the oldest (p19) are about Go: 16 a month.
	if b := h.get(h.accountPath(u)).Body.String(); !strings.Contains(b, "Cost: about 16 credits a month as delivered now") {
		t.Errorf("with include=go: no 16 a month:\n%s", b)
	}
}
