package web

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

func TestPagesRenderWithSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/", "/subscribe?url=https://example.com/feed&email=a@example.com", "/signin",
		"/feeds/status", "/static/style.css", "/static/tz.js"} {
		w := h.get(p)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", p, w.Code, w.Body.String())
			continue
		}
		hd := w.Header()
		for k, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"Referrer-Policy":        "no-referrer",
			"X-Frame-Options":        "DENY",
		} {
			if got := hd.Get(k); got != want {
				t.Errorf("GET %s: %s = %q, want %q", p, k, got, want)
			}
		}
		csp := hd.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		if strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
			b := w.Body.String()
			if strings.Contains(b, "<script>") || strings.Contains(b, " style=") || strings.Contains(b, "onclick") {
				t.Errorf("GET %s: inline script or style in the page", p)
			}
		}
	}
	w := h.get("/subscribe?url=https://example.com/feed&email=a@example.com")
	if b := w.Body.String(); !strings.Contains(b, `value="https://example.com/feed"`) || !strings.Contains(b, `value="a@example.com"`) ||
		!strings.Contains(b, "<h1>Get example.com by email</h1>") {
		t.Errorf("/subscribe is not prefilled or does not name the site:\n%s", b)
	}
	// A feed feedmail knows is called by its title, and the page fetches
	// nothing (anyone can make such a link).
	f := h.feed("The Known Feed")
	feed, _, err := h.st.EnsureFeed(context.Background(), f.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.SetFeedMetaIfEmpty(context.Background(), feed.ID, "The Known Feed", ""); err != nil {
		t.Fatal(err)
	}
	before := len(f.Requests())
	if b := h.get("/subscribe?url=" + url.QueryEscape(f.URL())).Body.String(); !strings.Contains(b, "<h1>Get The Known Feed by email</h1>") {
		t.Errorf("the landing page does not name the known feed")
	}
	if len(f.Requests()) != before {
		t.Error("the landing page fetched the feed")
	}
}

func TestSignupInlineErrors(t *testing.T) {
	h := newHarness(t)
	good := h.feed("Good feed")
	gone := h.farm.AddFeed(farm.Spec{Title: "Missing", Status: http.StatusNotFound})
	noFeedSite := h.farm.AddSite()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/feed"
	ln.Close() // nothing listens there any more

	cases := []struct {
		name                string
		email, url, deliver string
		zone                string
		want                map[string]string // field id → message part
	}{
		{"bad email", "not-an-address", good.URL(), "instant", "UTC", map[string]string{"email": "not a valid email address"}},
		{"email with name", "Ann <ann@example.com>", good.URL(), "instant", "UTC", map[string]string{"email": "not a valid email address"}},
		{"email without domain dot", "ann@localhost", good.URL(), "instant", "UTC", map[string]string{"email": "not a valid email address"}},
		{"empty email", "", good.URL(), "instant", "UTC", map[string]string{"email": "enter your email address"}},
		{"page without feed", "ann@example.com", noFeedSite, "instant", "UTC", map[string]string{"url": "that page has no feed"}},
		// Coarse words: the public is not told a refused connection from
		// a timeout, a missing name or an error status.
		{"address not answering", "ann@example.com", deadURL, "instant", "UTC", map[string]string{"url": "that address could not be fetched"}},
		{"404", "ann@example.com", gone.URL(), "instant", "UTC", map[string]string{"url": "that address could not be fetched"}},
		{"not a web address", "ann@example.com", "ftp://example.com/x", "instant", "UTC", map[string]string{"url": "not a web address"}},
		{"misspelled scheme", "ann@example.com", "htp:/bad", "instant", "UTC", map[string]string{"url": "not a web address"}},
		{"a word, no dot", "ann@example.com", "notaurl", "instant", "UTC", map[string]string{"url": "not a web address"}},
		{"missing //", "ann@example.com", "https:/example.com/feed", "instant", "UTC", map[string]string{"url": "not a web address"}},
		{"empty url", "ann@example.com", "", "instant", "UTC", map[string]string{"url": "enter the address"}},
		{"unknown delivery", "ann@example.com", good.URL(), "hourly-ish", "UTC", map[string]string{"delivery": "pick how often"}},
		{"unknown zone", "ann@example.com", good.URL(), "daily", "Mars/Olympus", map[string]string{"zone": "pick a time zone"}},
		{"both wrong", "nope", noFeedSite, "instant", "UTC", map[string]string{"email": "not a valid email", "url": "no feed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := h.post("/subscriptions", url.Values{"email": {c.email}, "url": {c.url}, "delivery": {c.deliver}, "zone": {c.zone}})
			if w.Code != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422\n%s", w.Code, w.Body.String())
			}
			body := w.Body.String()
			got := fieldErrors(body)
			for field, msg := range c.want {
				if !strings.Contains(got[field], msg) {
					t.Errorf("error next to %s = %q, want it to say %q (all: %v)", field, got[field], msg, got)
				}
			}
			for _, detail := range []string{"404", "did not answer", "in time", "refused", "does not exist"} {
				if strings.Contains(got["url"], detail) {
					t.Errorf("error next to url = %q tells the detail %q", got["url"], detail)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("errors shown: %v, want only %v", got, c.want)
			}
			// The form keeps what was typed.
			if c.email != "" && !strings.Contains(body, `value="`+html.EscapeString(c.email)+`"`) {
				t.Errorf("email %q not kept in the form", c.email)
			}
			if c.url != "" && !strings.Contains(body, `value="`+html.EscapeString(c.url)+`"`) {
				t.Errorf("url %q not kept in the form", c.url)
			}
			if c.deliver == "daily" && !strings.Contains(body, `value="daily" checked`) {
				t.Errorf("delivery choice not kept")
			}
		})
	}
	if n := len(h.notices()); n != 0 {
		t.Errorf("%d emails queued for invalid forms", n)
	}
}

func TestSignupRefusesPrivateNetworksUnlessAllowed(t *testing.T) {
	h := newHarness(t, func(d *Deps) { d.Fetcher = fetcher.New(fetcher.Config{Timeout: 5 * time.Second}) })
	f := h.feed("Local")
	w := h.post("/subscriptions", url.Values{"email": {"ann@example.com"}, "url": {f.URL()}, "delivery": {"instant"}})
	// The public is told no more than for any address that cannot be
	// fetched (the log tells the operator how to allow it).
	if w.Code != http.StatusUnprocessableEntity || fieldErrors(w.Body.String())["url"] != subscribe.NotFetched {
		t.Fatalf("%d %v", w.Code, fieldErrors(w.Body.String()))
	}
}

func TestSignupConfirmFlow(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Daily Bugle")
	h.signup("Reader@Example.COM", f.URL(), "instant")

	u, err := h.st.UserByEmail(ctx, "Reader@example.com")
	if err != nil {
		t.Fatal(err)
	}
	subs := h.subsOf(u)
	if len(subs) != 1 || subs[0].State != store.SubPending || subs[0].FeedTitle != "Daily Bugle" || u.ConfirmedAt != nil {
		t.Fatalf("after signup: %+v user %+v", subs, u)
	}
	if feed, _ := h.st.FeedByURL(ctx, f.URL()); feed.SubscriberCount != 0 {
		t.Fatalf("a pending subscription counts as a subscriber: %d", feed.SubscriberCount)
	}
	ns := h.notices()
	if len(ns) != 1 || strings.Contains(ns[0].Subject, "Daily Bugle") || !strings.Contains(ns[0].Text, "“Daily Bugle”") || !strings.Contains(ns[0].Links[0].URL, "/confirm/") {
		t.Fatalf("confirmation notice: %+v", ns)
	}
	confirm := h.lastLink()

	// The same signup again a moment later sends nothing, and the page
	// does not claim it did.
	w := h.post("/subscriptions", url.Values{"email": {"Reader@Example.COM"}, "url": {f.URL()}, "delivery": {"instant"}, "zone": {"Europe/Berlin"}})
	if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, "a moment ago, so we did not send another one") ||
		strings.Contains(body, "We sent a confirmation link") || len(h.notices()) != 1 {
		t.Fatalf("the same signup again: %d, %d notices\n%s", w.Code, len(h.notices()), body)
	}

	// GET shows a button and changes nothing (mail scanners follow links).
	w = h.get(confirm)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<form method="post" action="`+confirm+`"`) {
		t.Fatalf("GET confirm: %d\n%s", w.Code, w.Body.String())
	}
	if subs := h.subsOf(u); subs[0].State != store.SubPending {
		t.Fatal("GET confirmed the subscription")
	}

	w = h.post(confirm, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "You are subscribed") ||
		!strings.Contains(w.Body.String(), "/account/") || !strings.Contains(w.Body.String(), "500 free credits") {
		t.Fatalf("POST confirm: %d\n%s", w.Code, w.Body.String())
	}
	u, _ = h.st.UserByID(ctx, u.ID)
	if subs := h.subsOf(u); subs[0].State != store.SubActive || u.ConfirmedAt == nil || u.Balance != 500 {
		t.Fatalf("after confirm: %+v, user %+v", subs, u)
	}
	if feed, _ := h.st.FeedByURL(ctx, f.URL()); feed.SubscriberCount != 1 {
		t.Fatalf("subscriber count %d", feed.SubscriberCount)
	}

	// Twice is harmless: no second trial.
	w = h.post(confirm, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Already confirmed") {
		t.Fatalf("second POST: %d", w.Code)
	}
	if u, _ = h.st.UserByID(ctx, u.ID); u.Balance != 500 {
		t.Fatalf("balance after second confirm %d", u.Balance)
	}

	// A second feed confirmed later grants nothing more.
	g := h.feed("Second")
	h.signup("Reader@example.com", g.URL(), "daily")
	h.post(h.lastLink(), nil)
	if u, _ = h.st.UserByID(ctx, u.ID); u.Balance != 500 {
		t.Fatalf("trial granted twice: %d", u.Balance)
	}
	subs = h.subsOf(u)
	if len(subs) != 2 || subs[1].DigestName != "Daily" || subs[1].State != store.SubActive {
		t.Fatalf("digest subscription: %+v", subs)
	}

	// Signing up again for an active subscription leaves it alone and
	// sends a sign-in link instead of a confirmation.
	h.signup("Reader@example.com", f.URL(), "weekly")
	if subs := h.subsOf(u); subs[0].DigestID != nil || subs[0].State != store.SubActive {
		t.Fatalf("unauthenticated form changed an active subscription: %+v", subs[0])
	}
	if l := h.lastLink(); !strings.HasPrefix(l, "/account/") {
		t.Fatalf("expected a sign-in link, got %s", l)
	}
}

func TestSignupAutodiscovery(t *testing.T) {
	h := newHarness(t)
	one := h.feed("Only feed")
	site1 := h.farm.AddSite(one)
	h.signup("ann@example.com", site1, "instant")
	u, _ := h.st.UserByEmail(context.Background(), "ann@example.com")
	if subs := h.subsOf(u); len(subs) != 1 || subs[0].FeedURL != one.URL() {
		t.Fatalf("one advertised feed: %+v", subs)
	}

	a, b := h.feed("Posts"), h.farm.AddFeed(farm.Spec{Title: "Comments", Format: farm.Atom, ItemCount: 1})
	site2 := h.farm.AddSite(a, b)
	w := h.post("/subscriptions", url.Values{"email": {"bob@example.com"}, "url": {site2}, "delivery": {"weekly"}, "zone": {"Asia/Tokyo"}})
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `type="radio" name="url"`) ||
		!strings.Contains(body, a.URL()) || !strings.Contains(body, b.URL()) || !strings.Contains(body, "Comments") {
		t.Fatalf("pick page: %d\n%s", w.Code, body)
	}
	if !strings.Contains(body, `value="bob@example.com"`) || !strings.Contains(body, `value="weekly" checked`) ||
		!strings.Contains(body, `value="Asia/Tokyo" selected`) {
		t.Fatalf("pick page lost what was typed")
	}
	if _, err := h.st.UserByEmail(context.Background(), "bob@example.com"); err == nil {
		t.Fatal("a user was created before a feed was picked")
	}
	h.signup("bob@example.com", b.URL(), "weekly")
	bob, _ := h.st.UserByEmail(context.Background(), "bob@example.com")
	if subs := h.subsOf(bob); len(subs) != 1 || subs[0].FeedURL != b.URL() || subs[0].DigestName != "Weekly" {
		t.Fatalf("picked feed: %+v", subs)
	}
	if bob.Timezone != "Europe/Berlin" { // the harness's signup sends Europe/Berlin
		t.Fatalf("zone %q", bob.Timezone)
	}
}

func TestHoneypot(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	w := h.post("/subscriptions", url.Values{"email": {"bot@example.com"}, "url": {f.URL()}, "delivery": {"instant"}, "website": {"http://spam.example"}})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Check your inbox") {
		t.Fatalf("%d", w.Code)
	}
	if _, err := h.st.UserByEmail(context.Background(), "bot@example.com"); err == nil || len(h.notices()) != 0 {
		t.Fatal("the honeypot let a robot sign up")
	}
	if len(f.Requests()) != 0 {
		t.Fatal("the honeypot still fetched the feed")
	}
}

func TestRequestSizeLimit(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("x", maxFormBytes+1)
	w := h.post("/subscriptions", url.Values{"email": {"a@example.com"}, "url": {big}})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d, want 413", w.Code)
	}
}

func TestCrossOriginFormsRejected(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	form := url.Values{"email": {"ann@example.com"}, "url": {f.URL()}, "delivery": {"instant"}}
	cases := []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"signup cross-site", "/subscriptions", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"signup other origin", "/subscriptions", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"sign-in cross-site", "/signin", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"confirm cross-site", "/confirm/x", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"account action cross-site", "/account/x/digests", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"signup same origin", "/subscriptions", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"signup no browser headers", "/subscriptions", nil, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := h.do(req{method: "POST", path: c.path, form: form, header: c.header})
			if w.Code != c.want {
				t.Fatalf("%d, want %d\n%s", w.Code, c.want, w.Body.String())
			}
			if c.want == http.StatusForbidden && !strings.Contains(w.Body.String(), "another site") {
				t.Fatalf("403 page does not explain: %s", w.Body.String())
			}
		})
	}
}

func TestRateLimits(t *testing.T) {
	lim := Limits{
		SignupPerIP:      Limit{Every: time.Minute, Burst: 2},
		SignupPerMailbox: Limit{Every: 10 * time.Minute, Burst: 3},
		SignInPerIP:      Limit{Every: time.Minute, Burst: 2},
		SignInPerAddress: Limit{Every: 15 * time.Minute, Burst: 1},
	}
	h := newHarness(t, withLimits(lim))
	f := h.feed("Feed")
	signup := func(email, ip string) int {
		return h.do(req{method: "POST", path: "/subscriptions", remote: ip + ":999",
			form: url.Values{"email": {email}, "url": {f.URL()}, "delivery": {"instant"}}}).Code
	}
	// Per IP: two, then 429 with Retry-After, then one more after a minute.
	if a, b := signup("a@example.com", "198.51.100.1"), signup("b@example.com", "198.51.100.1"); a != 200 || b != 200 {
		t.Fatalf("%d %d", a, b)
	}
	w := h.do(req{method: "POST", path: "/subscriptions", remote: "198.51.100.1:5",
		form: url.Values{"email": {"c@example.com"}, "url": {f.URL()}}})
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), "Slow down") {
		t.Fatalf("third from one IP: %d %q", w.Code, w.Header().Get("Retry-After"))
	}
	h.clk.Advance(time.Minute)
	if c := signup("c@example.com", "198.51.100.1"); c != 200 {
		t.Fatalf("after a minute: %d", c)
	}
	// Per address: three confirmation emails from different IPs, then 429
	// however many IPs. Sending the same signup again queues no second
	// email, so it does not count.
	victimFeeds := []string{h.feed("Victim 1").URL(), h.feed("Victim 2").URL(), h.feed("Victim 3").URL(), h.feed("Victim 4").URL()}
	victim := func(email, feedURL, ip string) int {
		return h.do(req{method: "POST", path: "/subscriptions", remote: ip + ":999",
			form: url.Values{"email": {email}, "url": {feedURL}, "delivery": {"instant"}}}).Code
	}
	for i, ip := range []string{"203.0.113.1", "203.0.113.2"} {
		if c := victim("victim@example.com", victimFeeds[i], ip); c != 200 {
			t.Fatalf("victim %d: %d", i, c)
		}
	}
	if c := victim("victim@example.com", victimFeeds[1], "203.0.113.5"); c != 200 {
		t.Fatalf("the same signup again: %d", c)
	}
	if c := victim("VICTIM@example.com", victimFeeds[2], "203.0.113.3"); c != 200 {
		t.Fatalf("victim 3: %d", c)
	}
	if c := victim("victim@example.com", victimFeeds[3], "203.0.113.4"); c != http.StatusTooManyRequests {
		t.Fatalf("fourth email to one address: %d", c)
	}
	// Attempts that send nothing (no feed there) do not count: after more
	// failures than the burst, the address's first real signup goes
	// through.
	for i := range 5 {
		w := h.do(req{method: "POST", path: "/subscriptions", remote: fmt.Sprintf("203.0.113.%d:1", 10+i),
			form: url.Values{"email": {"typo@example.com"}, "url": {f.URL() + "-missing"}, "delivery": {"instant"}}})
		if w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("failed attempt %d: %d", i+1, w.Code)
		}
	}
	if c := signup("typo@example.com", "203.0.113.20"); c != 200 {
		t.Fatalf("a valid signup after failed attempts: %d, want 200", c)
	}
	// Sign-in links: one per address.
	signIn := func(email, ip string) int {
		return h.do(req{method: "POST", path: "/signin", remote: ip + ":1", form: url.Values{"email": {email}}}).Code
	}
	if c := signIn("a@example.com", "192.0.2.50"); c != 200 {
		t.Fatalf("sign-in: %d", c)
	}
	if c := signIn("a@example.com", "192.0.2.51"); c != http.StatusTooManyRequests {
		t.Fatalf("second sign-in to one address: %d", c)
	}
	if c := signIn("b@example.com", "192.0.2.50"); c != 200 {
		t.Fatalf("sign-in for another address: %d", c)
	}
	if c := signIn("c@example.com", "192.0.2.50"); c != http.StatusTooManyRequests {
		t.Fatalf("third sign-in from one IP: %d", c)
	}
}

func TestBucketsRefill(t *testing.T) {
	b := newBuckets(Limit{Every: 10 * time.Second, Burst: 3})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		want bool
	}{{0, true}, {0, true}, {0, true}, {0, false}, {5 * time.Second, false}, {10 * time.Second, true},
		{10 * time.Second, false}, {60 * time.Second, true}, {60 * time.Second, true}, {60 * time.Second, true}, {60 * time.Second, false}}
	for i, s := range steps {
		if ok, _ := b.allow("k", t0.Add(s.at)); ok != s.want {
			t.Fatalf("step %d at %s: %v, want %v", i, s.at, ok, s.want)
		}
	}
	if ok, _ := newBuckets(Limit{}).allow("k", t0); !ok {
		t.Fatal("a zero Limit must not limit")
	}
}

func TestSignIn(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	before := len(h.notices())
	w := h.post("/signin", url.Values{"email": {"nobody@example.com"}})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Check your inbox") || len(h.notices()) != before {
		t.Fatalf("unknown address: %d, %d notices", w.Code, len(h.notices()))
	}
	w = h.post("/signin", url.Values{"email": {"ann@example.com"}})
	if w.Code != http.StatusOK || len(h.notices()) != before+1 {
		t.Fatalf("known address: %d", w.Code)
	}
	link := h.lastLink()
	if !strings.HasPrefix(link, "/account/") {
		t.Fatalf("link %s", link)
	}
	if w := h.get(link); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "ann@example.com") {
		t.Fatalf("sign-in link: %d", w.Code)
	}
	h.clk.Advance(25 * time.Hour)
	if w := h.get(link); w.Code != http.StatusGone {
		t.Fatalf("sign-in link after 25 h: %d, want 410", w.Code)
	}
	w = h.post("/signin", url.Values{"email": {"nope"}})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(fieldErrors(w.Body.String())["email"], "not a valid email address") {
		t.Fatalf("bad address: %d", w.Code)
	}
}

func TestZoneGuess(t *testing.T) {
	cases := []struct{ header, want string }{
		{"en-GB,en;q=0.9", "Europe/London"},
		{"de-DE", "Europe/Berlin"},
		{"fr", "UTC"},
		{"zh-Hant-TW,zh;q=0.8", "Asia/Taipei"},
		{"", "UTC"},
		{"xx-ZZ, pt-BR;q=0.5", "America/Sao_Paulo"},
	}
	for _, c := range cases {
		if got := zoneFromAcceptLanguage(c.header); got != c.want {
			t.Errorf("%q: %s, want %s", c.header, got, c.want)
		}
	}
	h := newHarness(t)
	w := h.do(req{method: "GET", path: "/", header: map[string]string{"Accept-Language": "ja-JP"}})
	if b := w.Body.String(); !strings.Contains(b, `<option value="Asia/Tokyo" selected>`) || !strings.Contains(b, "data-browser-zone") {
		t.Fatal("the signup form does not offer the guessed zone")
	}
	f := h.feed("F")
	w = h.post("/subscriptions", url.Values{"email": {"x"}, "url": {f.URL()}, "zone": {"Asia/Kolkata"}})
	if b := w.Body.String(); strings.Contains(b, "data-browser-zone") || !strings.Contains(b, `<option value="Asia/Kolkata" selected>`) {
		t.Fatal("after sending, the person's zone must stay as chosen")
	}
}

func TestSignupTrustsKnownFeeds(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Popular")
	h.signup("a@example.com", f.URL(), "instant")
	fetched := len(f.Requests())
	if fetched != 1 {
		t.Fatalf("first signup fetched %d times", fetched)
	}
	// Once the poller has polled it, more signups do not fetch it again.
	feed, _ := h.st.FeedByURL(ctx, f.URL())
	now := h.clk.Now()
	if err := h.st.DB.Model(&store.Feed{}).Where("id = ?", feed.ID).Update("last_success_at", now).Error; err != nil {
		t.Fatal(err)
	}
	h.signup("b@example.com", f.URL(), "instant")
	h.signup("c@example.com", f.URL(), "daily")
	if n := len(f.Requests()); n != fetched {
		t.Fatalf("signups for a known feed fetched it %d more times", n-fetched)
	}
	for state, says := range map[string]string{store.FeedGone: "gone", store.FeedBlacklisted: "stopped polling"} {
		if err := h.st.DB.Model(&store.Feed{}).Where("id = ?", feed.ID).Update("state", state).Error; err != nil {
			t.Fatal(err)
		}
		w := h.post("/subscriptions", url.Values{"email": {"d@example.com"}, "url": {f.URL()}, "delivery": {"instant"}})
		if w.Code != http.StatusUnprocessableEntity || !strings.Contains(fieldErrors(w.Body.String())["url"], says) {
			t.Errorf("%s feed: %d %v", state, w.Code, fieldErrors(w.Body.String()))
		}
	}
}
