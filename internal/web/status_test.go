package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/token"
)

// pollFeed records polls for a feed as the poller would, with the next poll
// decided by reason.
func (h *harness) pollFeed(feedURL, reason string, polls ...store.PollLog) {
	h.t.Helper()
	ctx := context.Background()
	f, err := h.st.FeedByURL(ctx, feedURL)
	if err != nil {
		h.t.Fatal(err)
	}
	now := h.clk.Now()
	for i := range polls {
		polls[i].FeedID = f.ID
		if err := h.st.DB.Create(&polls[i]).Error; err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{
		"poll_reason": reason, "next_poll_at": now.Add(15 * time.Minute), "last_polled_at": now,
		"last_status": 200, "last_elapsed_ms": 1500, "etag": `"abc"`,
	}).Error; err != nil {
		h.t.Fatal(err)
	}
}

func TestStatusPage(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Status feed")
	h.subscribeConfirmed("secret-reader@example.com", f.URL(), "instant")
	now := h.clk.Now()
	h.pollFeed(f.URL(), "Cache-Control max-age=3600, capped at 24 h",
		store.PollLog{PolledAt: now.Add(-time.Hour), Status: 200, Outcome: "ok", Bytes: 2048, ElapsedMS: 120, NewItems: 2, Reason: "default 5 min", Seq: 1},
		store.PollLog{PolledAt: now.Add(-50 * time.Minute), Status: 304, Outcome: "not-modified", Conditional: true, ElapsedMS: 45, Reason: "Cache-Control max-age=3600", Seq: 2})
	// Ten more 304s were folded into the newest line (store.Repeats).
	if err := h.st.DB.Model(&store.Feed{}).Where("url = ?", f.URL()).Update("log_seq", 12).Error; err != nil {
		t.Fatal(err)
	}

	w := h.get("/feeds/status?url=" + url.QueryEscape(f.URL()))
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("%d\n%s", w.Code, body)
	}
	for _, want := range []string{"Status feed", "Active: polled regularly", "in 15 min", "Your Cache-Control header (Cache-Control max-age=3600) asks us to wait",
		"304 Not Modified", "and 10 more like it", "200 OK", "2.0 KB", "45 ms", "· conditional ·", "Next poll decided by", "No WebSub hub", "Add a WebSub hub",
		"Answer faster", "/ping?url=" + url.QueryEscape(f.URL())} {
		if !strings.Contains(body, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(body, "secret-reader") || strings.Contains(body, "1 subscriber") {
		t.Error("the public status page shows subscriber data")
	}
	if idx304, idx200 := strings.Index(body, "304 Not Modified"), strings.Index(body, `data-label="Answer">200 OK`); idx304 > idx200 {
		t.Error("polls are not newest first")
	}
	if strings.Count(body, "more like it") != 1 {
		t.Error("a line with nothing folded into it shows repeats")
	}
	if strings.Count(body, "Why then") != 1 || strings.Contains(body, "Rule applied") {
		t.Error("Why then is not said once, in plain words")
	}
	// A feed nobody follows has no next poll to explain.
	lone := h.feed("Nobody follows")
	if _, _, err := h.st.EnsureFeed(context.Background(), lone.URL()); err != nil {
		t.Fatal(err)
	}
	if b := h.get("/feeds/status?url=" + url.QueryEscape(lone.URL())).Body.String(); strings.Contains(b, "Why then") ||
		!strings.Contains(b, "Not polled") {
		t.Error("an unfollowed feed's page explains a poll that will not happen")
	}

	// A success that left a warning (a feed cut short, items the parser
	// did not find) shows it as a warning, an error streak as an error.
	const warning = "the feed ends on line 80 after 14 complete items without its closing tags (truncated?): 14 items kept, the one cut short ignored"
	for _, c := range []struct {
		errors int
		want   string
	}{{0, "<strong>Warning:</strong> " + warning}, {2, `<span class="muted">Error: ` + warning}} {
		if err := h.st.DB.Model(&store.Feed{}).Where("url = ?", f.URL()).Updates(map[string]any{
			"last_error": warning, "consecutive_errors": c.errors}).Error; err != nil {
			t.Fatal(err)
		}
		h.clk.Advance(statusCacheTTL)
		if body := h.get("/feeds/status?url=" + url.QueryEscape(f.URL())).Body.String(); !strings.Contains(body, c.want) {
			t.Errorf("with %d errors the status page lacks %q", c.errors, c.want)
		}
	}

	if w := h.get("/feeds/status?url=" + url.QueryEscape("https://nobody.example/feed")); w.Code != http.StatusNotFound ||
		!strings.Contains(w.Body.String(), "We do not follow this feed") {
		t.Fatalf("unknown feed: %d", w.Code)
	}
}

func TestPlainReasons(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Cache-Control max-age=3600", "Your Cache-Control header (Cache-Control max-age=3600) asks us to wait; we do."},
		{"404: penalty 24 h (3rd consecutive error)", "404: we'll try again in 24 h (3rd consecutive error)."},
		{"timeout: penalty 2 h (2nd consecutive error)", "timeout: we'll try again in 2 h (2nd consecutive error)."},
		{"429: Retry-After 120 s (1st consecutive error)", "429: your Retry-After asks us to wait 120 s (1st consecutive error), so we do."},
		{"WebSub active: backup poll weekly", "Your hub tells us about new posts the moment you publish, so we only poll once a week as a backup."},
		{"inactive for 6 months: at least 6 h", "No new post for 6 months, so we check less often (at least 6 h). A new post brings the usual pace back."},
		{"default 15 min: answered in 1.2 s with ETag", "You sent no caching headers, so we use our default: 15 min: answered in 1.2 s with ETag."},
		{"something new", "something new"},
	}
	for _, c := range cases {
		if got := plainReason(c.in); got != c.want {
			t.Errorf("plainReason(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestHostileTitlesAreEscaped puts markup in feed titles and checks every
// page that shows a title.
func TestHostileTitlesAreEscaped(t *testing.T) {
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	h := newHarness(t)
	f := h.farm.AddFeed(farm.Spec{Title: evil, ItemCount: 2})
	g := h.farm.AddFeed(farm.Spec{Title: evil + " two", ItemCount: 2, Format: farm.Atom})
	site := h.farm.AddSite(f, g)

	pages := map[string]string{}
	w := h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {site}, "delivery": {"daily"}})
	pages["pick a feed"] = w.Body.String()
	w = h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {f.URL()}, "delivery": {"daily"}})
	pages["check your inbox"] = w.Body.String()
	confirm := h.lastLink()
	pages["confirm (GET)"] = h.get(confirm).Body.String()
	pages["confirm (POST)"] = h.post(confirm, nil).Body.String()
	u, _ := h.st.UserByEmail(context.Background(), "ann@example.com")
	acc := "/account/" + h.sign.SignIssued(token.Account, u.ID, h.clk.Now(), h.clk.Now().Add(time.Hour))
	h.post(acc+"/digests", url.Values{"name": {evil}, "preset": {"weekly"}, "zone": {"UTC"}})
	pages["account"] = h.get(acc).Body.String()
	sub := h.subsOf(u)[0]
	unsub := strings.TrimPrefix(h.links.Unsubscribe(sub.ID), "http://feedmail.test")
	pages["digest unsubscribe"] = h.get(strings.TrimPrefix(h.links.DigestUnsubscribe(*sub.DigestID), "http://feedmail.test")).Body.String()
	pages["unsubscribe (GET)"] = h.get(unsub).Body.String()
	h.pollFeed(f.URL(), "default 1 h")
	pages["status"] = h.get("/feeds/status?url=" + url.QueryEscape(f.URL())).Body.String()
	var doc bytes.Buffer
	_ = opml.Write(&doc, "x", []opml.Outline{{Title: evil, XMLURL: "https://bad host/"}, {XMLURL: g.URL()}})
	pages["import report"] = h.upload(acc, doc.Bytes(), "instant").Body.String()
	pages["unsubscribe (POST)"] = h.post(unsub, nil).Body.String()
	pages["subscribe link"] = h.get("/subscribe?url=" + url.QueryEscape(evil) + "&email=" + url.QueryEscape(evil)).Body.String()

	for name, body := range pages {
		if !strings.Contains(body, "&lt;script&gt;alert") {
			t.Errorf("%s: the title is not shown escaped\n%s", name, body)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: markup from a feed title reached the page", name)
		}
	}
}

func TestPageCache(t *testing.T) {
	c := newPageCache(10*time.Second, 2)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fills := 0
	fill := func() (cachedPage, error) { fills++; return cachedPage{status: 200, body: []byte("x")}, nil }
	for _, at := range []time.Duration{0, 5 * time.Second, 9 * time.Second} {
		if p, err := c.get("a", t0.Add(at), fill); err != nil || string(p.body) != "x" {
			t.Fatal(p, err)
		}
	}
	if fills != 1 {
		t.Fatalf("%d fills within the TTL", fills)
	}
	c.get("a", t0.Add(10*time.Second), fill)
	if fills != 2 {
		t.Fatalf("no refill after the TTL: %d", fills)
	}
	// Errors are not cached; a panicking fill releases waiters.
	if _, err := c.get("b", t0, func() (cachedPage, error) { return cachedPage{}, errors.New("db down") }); err == nil {
		t.Fatal("error lost")
	}
	func() {
		defer func() { _ = recover() }()
		c.get("c", t0, func() (cachedPage, error) { panic("boom") })
	}()
	if _, err := c.get("c", t0, fill); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	// The size stays bounded.
	for i := range 10 {
		c.get(itoa(i), t0.Add(time.Minute), fill)
	}
	if len(c.m) > 2 {
		t.Fatalf("%d entries, max 2", len(c.m))
	}
}
