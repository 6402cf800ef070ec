package web

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// previewPath is the preview page of feed in format and delivery.
func previewPath(feed, format, delivery string) string {
	return "/preview?" + url.Values{"url": {feed}, "format": {format}, "delivery": {delivery}, "zone": {"Europe/Paris"}}.Encode()
}

// TestPreviewPage: the preview page is the email of the feed's newest post
// (or a digest issue) under its subject, with a policy that runs no
// script, may be framed by feedmail's own pages only and sandboxes
// itself; it stores nothing.
func TestPreviewPage(t *testing.T) {
	h := newHarness(t)
	f := h.farm.AddFeed(farm.Spec{Title: "Hostile Gazette", Items: []farm.Item{{
		Title: "Newest of all", Link: "https://example.org/newest", Published: h.clk.Now().Add(-time.Hour),
		Content: `<p>Text</p><script>parent.document.title='ran'</script><form action="https://evil.example/"><input name=x></form>` +
			`<link rel="stylesheet" href="https://evil.example/s.css"><img src="https://example.org/i.png" onerror="alert(1)">`,
	}, {Title: "Older", Published: h.clk.Now().Add(-48 * time.Hour), Content: "<p>old</p>"}}})
	for _, c := range []struct{ format, delivery, want string }{
		{"full", "instant", "Newest of all"},
		{"title", "instant", "Newest of all"},
		{"summary", "daily", "Your Daily digest"},
	} {
		w := h.get(previewPath(f.URL(), c.format, c.delivery))
		if w.Code != http.StatusOK {
			t.Fatalf("%s %s: %d\n%s", c.format, c.delivery, w.Code, w.Body.String())
		}
		hd := w.Header()
		if csp := hd.Get("Content-Security-Policy"); csp != previewCSP || strings.Contains(csp, "script-src") ||
			!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") {
			t.Errorf("policy %q", csp)
		}
		if hd.Get("X-Frame-Options") != "SAMEORIGIN" || hd.Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", hd)
		}
		b := w.Body.String()
		subject := regexp.MustCompile(`id="preview-subject">([^<]*)<`).FindStringSubmatch(b)
		if subject == nil || !strings.HasPrefix(html.UnescapeString(subject[1]), c.want) {
			t.Errorf("%s %s: subject %q, want %q…", c.format, c.delivery, subject, c.want)
		}
		for _, bad := range []string{"<script", "<form", "evil.example", "onerror"} {
			if strings.Contains(strings.ToLower(b), bad) {
				t.Errorf("%s %s: the preview carries %q", c.format, c.delivery, bad)
			}
		}
		if !strings.Contains(b, "you@example.com") || !strings.Contains(b, "/unsubscribe/your-own-link") {
			t.Errorf("%s %s: no placeholders:\n%s", c.format, c.delivery, b)
		}
	}
	for _, m := range []any{&store.User{}, &store.Subscription{}, &store.OutboxRow{}, &store.LedgerEntry{}, &store.Feed{}} {
		var n int64
		if err := h.st.DB.Model(m).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%T: %d rows, %v", m, n, err)
		}
	}
	if w := h.get(previewPath(f.URL(), "everything", "instant")); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "pick one of full, summary, title or article") {
		t.Errorf("a bad format: %d %s", w.Code, w.Body.String())
	}
}

// TestSignupPreviewButton: the form's "Preview the email" button shows
// the form again, as typed, with a frame of the preview of its choices,
// sandboxed without scripts; nothing is created. The page allows frames
// of its own only.
func TestSignupPreviewButton(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Button Feed")
	w := h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {f.URL()}, "delivery": {"weekly"},
		"format": {"summary"}, "zone": {"Asia/Tokyo"}, "preview": {"1"}})
	if w.Code != http.StatusOK {
		t.Fatalf("preview button: %d\n%s", w.Code, w.Body.String())
	}
	b := w.Body.String()
	want := html.EscapeString(previewPathFor(f.URL(), "summary", "weekly", "Asia/Tokyo"))
	if !strings.Contains(b, `src="`+want+`"`) || !strings.Contains(b, `sandbox="allow-popups allow-popups-to-escape-sandbox"`) {
		t.Fatalf("no frame of %s:\n%s", want, b)
	}
	if !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-src 'self'") {
		t.Errorf("the signup page may not frame the preview: %q", w.Header().Get("Content-Security-Policy"))
	}
	if !strings.Contains(b, `value="ann@example.com"`) {
		t.Errorf("the form lost what was typed")
	}
	var n int64
	if err := h.st.DB.Model(&store.OutboxRow{}).Count(&n).Error; err != nil || n != 0 {
		t.Errorf("the preview button queued %d emails, %v", n, err)
	}
	if w := h.post("/subscriptions", url.Values{"preview": {"1"}}); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "type a feed or site address to see the email") {
		t.Errorf("preview without an address: %d", w.Code)
	}
}

// previewPathFor is previewSrc as the page writes it.
func previewPathFor(feed, format, delivery, zone string) string {
	return string(previewSrc(feed, format, delivery, zone))
}

// TestPreviewRateLimit: past the client's burst the preview answers 429
// with Retry-After, another client still gets its preview.
func TestPreviewRateLimit(t *testing.T) {
	lim := preview.Limits{PerClient: preview.Limit{Every: time.Minute, Burst: 2}}
	h := newHarness(t, func(d *Deps) { d.PreviewLimits = &lim })
	f := h.feed("Limited Feed")
	for i := range 2 {
		if w := h.get(previewPath(f.URL(), "full", "instant")); w.Code != http.StatusOK {
			t.Fatalf("preview %d: %d", i+1, w.Code)
		}
	}
	w := h.get(previewPath(f.URL(), "full", "instant"))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("third preview: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if w := h.do(req{method: "GET", path: previewPath(f.URL(), "full", "instant"), remote: "198.51.100.7:99"}); w.Code != http.StatusOK {
		t.Fatalf("another client: %d", w.Code)
	}
}

// TestPreviewRefusesPrivateNetworks: without private networks allowed,
// a feed on loopback gets the same refusal from the preview as from the
// signup form, and no request.
func TestPreviewRefusesPrivateNetworks(t *testing.T) {
	h := newHarness(t, func(d *Deps) {
		d.Config.AllowPrivateNetworks = false
		d.Fetcher = fetcher.New(fetcher.Config{BaseURL: d.Config.BaseURL, Timeout: 5 * time.Second})
	})
	f := h.feed("Loopback Feed")
	w := h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {f.URL()}, "zone": {"UTC"}})
	m := regexp.MustCompile(`id="url-error"><span aria-hidden="true">⚠ </span>([^<]+)<`).FindStringSubmatch(w.Body.String())
	if w.Code != http.StatusUnprocessableEntity || m == nil {
		t.Fatalf("signup of a loopback feed: %d\n%s", w.Code, w.Body.String())
	}
	p := h.get(previewPath(f.URL(), "full", "instant"))
	if p.Code != http.StatusUnprocessableEntity || !strings.Contains(p.Body.String(), "No preview: "+m[1]+".") {
		t.Fatalf("preview of a loopback feed: %d %s; signup said %q", p.Code, p.Body.String(), m[1])
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the loopback feed got %d requests", n)
	}
}

// TestAccountAndPublisherPreview: the account page's "Preview" shows the
// email of the subscription's feed in the format and delivery its form
// chose; the publisher's page shows what their readers get.
func TestAccountAndPublisherPreview(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Account Feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	sub := h.subsOf(u)[0]
	acc := h.accountPath(u)
	b := h.get(acc + "?preview=" + strconv.FormatInt(sub.ID, 10) + "&format=title&delivery=instant").Body.String()
	want := html.EscapeString(previewPathFor(f.URL(), "title", "instant", "Europe/Berlin"))
	if !strings.Contains(b, `src="`+want+`"`) {
		t.Fatalf("the account page has no frame of %s:\n%s", want, b)
	}
	if n := strings.Count(b, `src="/preview`); n != 1 {
		t.Errorf("%d previews load on the account page, want the one asked for", n)
	}
	if _, err := h.st.SetFeedOwner(t.Context(), sub.FeedID, u.ID, "test"); err != nil {
		t.Fatal(err)
	}
	pb := h.get(strings.TrimSuffix(acc, "/") + "/publisher").Body.String()
	if !strings.Contains(pb, "What your readers get") || !strings.Contains(pb, html.EscapeString(previewPathFor(f.URL(), "full", "instant", ""))) {
		t.Fatalf("the publisher's page shows no preview:\n%s", pb)
	}
}
