package poller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/websubtest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/poller"
)

var subT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// subEnv is feedmail's subscriber side on loopback: a store with a fake
// clock, the web server with the WebSub callback (its Ingest records what
// it gets, or runs the real poller's Ingest), and a WebSubManager whose hub
// requests go through fetcher.NewHTTPClient (AllowPrivate: the hubs are on
// 127.0.0.1).
type subEnv struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	st    *store.Store
	m     *metrics.Metrics
	web   *httptest.Server
	links links.Links
	mgr   *poller.WebSubManager
	fetch *fetcher.Client

	mu     sync.Mutex
	pushed []subPush
	ingest web.IngestFunc // nil: record
}

type subPush struct {
	feedID      int64
	body, ctype string
}

func newSubEnv(t *testing.T) *subEnv {
	t.Helper()
	e := &subEnv{t: t, ctx: context.Background(), clk: clock.NewFake(subT0), m: metrics.New()}
	e.st = storetest.Open(t, storetest.Options{Clock: e.clk})
	signer, err := token.NewSigner([]byte("fedcba9876543210fedcba9876543210"))
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Store: e.st, Clock: e.clk, Tokens: signer, Metrics: e.m,
		Config: config.Config{BaseURL: "http://feedmail.test", From: "feedmail@example.com"}})
	srv.MountWebSub(web.WebSubOptions{Ingest: func(ctx context.Context, id int64, body []byte, ct string) error {
		e.mu.Lock()
		fn := e.ingest
		if fn == nil {
			e.pushed = append(e.pushed, subPush{id, string(body), ct})
		}
		e.mu.Unlock()
		if fn != nil {
			return fn(ctx, id, body, ct)
		}
		return nil
	}})
	e.web = httptest.NewServer(srv.Handler())
	t.Cleanup(e.web.Close)
	e.links = links.New(e.web.URL, signer, "feedmail@example.com")
	e.mgr = e.newManager(e.st)
	e.fetch = fetcher.New(fetcher.Config{AllowPrivate: true, BaseURL: e.web.URL})
	t.Cleanup(e.fetch.CloseIdleConnections)
	return e
}

// newManager makes a WebSubManager on st (another process, for a second store).
func (e *subEnv) newManager(st *store.Store) *poller.WebSubManager {
	e.t.Helper()
	mgr, err := poller.NewWebSubManager(poller.WebSubConfig{
		Store:    st,
		HTTP:     fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, BaseURL: e.web.URL}),
		Callback: e.links.WebSubCallback,
		BaseURL:  e.web.URL,
		Clock:    e.clk,
		Metrics:  e.m,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return mgr
}

// feed adds a feed for u with one confirmed subscriber.
func (e *subEnv) feed(u string) *store.Feed { return storetest.FollowedFeed(e.t, e.st, u) }

func (e *subEnv) reload(id int64) *store.Feed { return storetest.Feed(e.t, e.st, id) }

// hubFeed returns a followed feed whose document advertises hub.
func (e *subEnv) hubFeed(t *testing.T, hub *websubtest.Hub) *store.Feed {
	t.Helper()
	ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": serve("application/atom+xml", atomDoc(hub.URL, "BASE/feed"))})
	return e.feed(ts.URL + "/feed")
}

// poll fetches f like a poll and hands the answer to the subscriber.
func (e *subEnv) poll(f *store.Feed) {
	e.t.Helper()
	resp, err := e.fetch.Fetch(e.ctx, fetcher.Request{URL: f.URL})
	if err != nil {
		e.t.Fatalf("fetch %s: %v", f.URL, err)
	}
	if resp.Status != http.StatusOK {
		e.t.Fatalf("fetch %s: status %d", f.URL, resp.Status)
	}
	if err := e.mgr.AfterFetch(e.ctx, e.reload(f.ID), resp); err != nil {
		e.t.Fatal(err)
	}
}

// run does one round of the renewal loop.
func (e *subEnv) run() int {
	e.t.Helper()
	n, err := e.mgr.RunOnce(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// subscribe takes f to an active subscription at hub (the feed document
// advertises it) and returns the feed.
func (e *subEnv) subscribe(f *store.Feed) *store.Feed {
	e.t.Helper()
	e.poll(f)
	e.run()
	g := e.reload(f.ID)
	if g.WebSubState != store.WebSubStateActive {
		e.t.Fatalf("state %q after subscribing, want active", g.WebSubState)
	}
	return g
}

func (e *subEnv) counter(event string) float64 {
	e.t.Helper()
	var d dto.Metric
	if err := e.m.WebSub.WithLabelValues(event).Write(&d); err != nil {
		e.t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func (e *subEnv) pushes() []subPush {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]subPush(nil), e.pushed...)
}

// topicServer serves documents by path on loopback; /hub proxies to hub so
// documents can name the hub with a relative URL.
func topicServer(t *testing.T, hub *websubtest.Hub, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, h)
	}
	if hub != nil {
		hu, _ := url.Parse(hub.URL)
		hu.Path = ""
		mux.Handle("/hub", httputil.NewSingleHostReverseProxy(hu))
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func serve(ctype, body string, links ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, l := range links {
			w.Header().Add("Link", strings.ReplaceAll(l, "BASE", "http://"+r.Host))
		}
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "BASE", "http://"+r.Host)))
	}
}

func atomDoc(hub, self string) string {
	return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>urn:t</id><updated>2026-03-01T00:00:00Z</updated>
<link rel="hub" href="` + hub + `"/><link rel="self" href="` + self + `"/>
<entry><title>one</title><id>urn:1</id><updated>2026-03-01T00:00:00Z</updated><link rel="hub" href="BASE/entry-hub"/></entry></feed>`
}

// TestWebSubDiscoveryAndSubscription models websub.rocks subscriber tests
// 100–104 and 200–202: wherever the hub and self are advertised, the
// subscription goes to that hub for that self URL, with our callback, a
// secret and the lease we ask for, and becomes active when the hub
// verifies it.
func TestWebSubDiscoveryAndSubscription(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{})
	other := websubtest.New(t, websubtest.Options{}) // advertised where it must not be used
	html := func(hub, self string) string {
		return `<!doctype html><html><head><title>x</title><link rel="hub" href="` + hub + `"><link rel="self" href="` + self + `"></head><body></body></html>`
	}
	rss := func(hub, self string) string {
		return `<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>R</title><link>BASE/</link>
<atom:link rel="hub" href="` + hub + `"/><atom:link rel="self" type="application/rss+xml" href="` + self + `"/>
<item><title>i</title><guid>g1</guid></item></channel></rss>`
	}
	ts := topicServer(t, hub, map[string]http.HandlerFunc{
		"/100":           serve("text/html", "<html><body>no links here</body></html>", `<`+hub.URL+`>; rel="hub"`, `<BASE/100>; rel="self"`),
		"/101":           serve("text/html; charset=utf-8", html(hub.URL, "BASE/101")),
		"/102":           serve("application/atom+xml", atomDoc(hub.URL, "BASE/102")),
		"/103":           serve("application/rss+xml", rss(hub.URL, "BASE/103")),
		"/104":           serve("application/atom+xml", atomDoc(other.URL, "BASE/104/body"), `<`+hub.URL+`>; rel="hub"`, `<BASE/104>; rel="self"`),
		"/rel/feed.atom": serve("application/atom+xml", atomDoc("/hub", "feed.atom")),
		"/200/fetched":   serve("application/atom+xml", atomDoc(hub.URL, "BASE/200/topic")),
		"/201":           func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/201/moved", http.StatusFound) },
		"/201/moved":     serve("text/plain", "moved", `</hub>; rel="hub"`, `<moved>; rel="self"`),
		"/202": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/202/moved", http.StatusMovedPermanently)
		},
		"/202/moved": serve("application/atom+xml", atomDoc("/hub", "/202/moved")),
	})
	proxied := ts.URL + "/hub" // the hub named by a relative URL on the topic's host
	tests := []struct {
		name      string
		path      string
		wantTopic string
		wantHub   string
	}{
		{"100 Link header fields", "/100", "/100", hub.URL},
		{"101 HTML link tags", "/101", "/101", hub.URL},
		{"102 Atom link tags", "/102", "/102", hub.URL},
		{"103 RSS atom:link", "/103", "/103", hub.URL},
		{"104 Link header beats the document", "/104", "/104", hub.URL},
		{"relative hub and self in the document", "/rel/feed.atom", "/rel/feed.atom", proxied},
		{"200 self differs from the fetched URL", "/200/fetched", "/200/topic", hub.URL},
		{"201 topic answers 302 (relative links)", "/201", "/201/moved", proxied},
		{"202 topic answers 301", "/202", "/202/moved", proxied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := e.feed(ts.URL + tt.path)
			before := len(hub.Requests())
			e.poll(f)
			if g := e.reload(f.ID); g.WebSubState != store.WebSubStateWanted {
				t.Fatalf("after the poll: state %q, want wanted", g.WebSubState)
			}
			if n := e.run(); n != 1 {
				t.Fatalf("loop handled %d feeds, want 1", n)
			}
			reqs := hub.Requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("hub got %d requests, want 1: %+v", len(reqs), reqs)
			}
			r := reqs[0]
			want := ts.URL + tt.wantTopic
			if r.Mode != "subscribe" || r.Topic != want || r.Callback != e.links.WebSubCallback(f.ID, r.Secret) ||
				len(r.Secret) != 64 || r.LeaseSeconds != "864000" || r.ContentType != "application/x-www-form-urlencoded" ||
				!strings.HasPrefix(r.UserAgent, "feedmail/1 (+"+e.web.URL+"/bot; 1 subscribers)") {
				t.Errorf("request %+v; want topic %s, our callback, a 64-hex secret, lease 864000", r, want)
			}
			g := e.reload(f.ID)
			now := e.clk.Now()
			if g.WebSubState != store.WebSubStateActive || !store.WebSubActive(g, now) || g.WebSubTopic != want || g.WebSubHub != tt.wantHub ||
				g.WebSubSecret != r.Secret {
				t.Errorf("feed websub %+v, want active for %s at %s", g.WebSub(), want, tt.wantHub)
			}
			if !g.WebSubExpiresAt.Equal(now.Add(10*24*time.Hour)) || !g.WebSubRenewAt.Equal(now.Add(5*24*time.Hour)) {
				t.Errorf("expires %v renew %v; want +10 d and +5 d", g.WebSubExpiresAt, g.WebSubRenewAt)
			}
			// A later poll that finds the same hub changes nothing.
			e.poll(g)
			if n := e.run(); n != 0 || len(hub.Requests()) != before+1 {
				t.Errorf("second poll: loop handled %d, hub requests %d", n, len(hub.Requests())-before)
			}
		})
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the hub only in the document of 104 got %d requests, want 0", n)
	}
}

// TestWebSubHubRedirects models websub.rocks 203 and 204: a hub that
// redirects with 307 or 308 gets the same request body at the new location.
func TestWebSubHubRedirects(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			e := newSubEnv(t)
			hub := websubtest.New(t, websubtest.Options{Redirect: code})
			ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": serve("application/atom+xml", atomDoc(hub.URL, "BASE/feed"))})
			f := e.subscribe(e.feed(ts.URL + "/feed"))
			reqs := hub.Requests()
			if len(reqs) != 1 || reqs[0].Path != "/hub/real" || reqs[0].Topic != ts.URL+"/feed" || reqs[0].Secret == "" {
				t.Fatalf("hub requests %+v, want one at /hub/real with the whole form", reqs)
			}
			if f.WebSubHub != hub.URL {
				t.Errorf("stored hub %q, want the advertised %q", f.WebSubHub, hub.URL)
			}
		})
	}
}

// TestWebSubUnknownTopicRefused models websub.rocks 205: a verification for
// a topic we did not ask for is answered 404 and changes nothing.
func TestWebSubUnknownTopicRefused(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{})
	ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": serve("application/atom+xml", atomDoc(hub.URL, "BASE/feed"))})
	f := e.subscribe(e.feed(ts.URL + "/feed"))
	cb := e.links.WebSubCallback(f.ID, f.WebSubSecret)
	tests := []struct {
		name, mode, topic string
	}{
		{"another topic", "subscribe", ts.URL + "/other"},
		{"topic differing in case", "subscribe", strings.ToUpper(ts.URL) + "/FEED"},
		{"unsubscribe nobody asked for", "unsubscribe", ts.URL + "/feed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := hub.Verify(e.ctx, cb, tt.mode, tt.topic, time.Hour)
			if v.Status != http.StatusNotFound || v.Confirmed {
				t.Errorf("callback answered %d %q, want 404", v.Status, v.Body)
			}
		})
	}
	// A feed that never asked for anything.
	g := e.feed(ts.URL + "/never")
	if v := hub.Verify(e.ctx, e.links.WebSubCallback(g.ID, g.WebSubSecret), "subscribe", g.URL, time.Hour); v.Status != http.StatusNotFound {
		t.Errorf("verification for a feed without a request: %d, want 404", v.Status)
	}
	if h := e.reload(f.ID); h.WebSubState != store.WebSubStateActive || !h.WebSubRenewAt.Equal(*f.WebSubRenewAt) {
		t.Errorf("subscription changed: %+v", h.WebSub())
	}
}

// TestWebSubContentDistribution models websub.rocks 300–302: content signed
// with sha1, sha256, sha384 or sha512 under our secret is ingested; a wrong
// signature, or none although we gave a secret, is acknowledged with 2xx
// and dropped.
func TestWebSubContentDistribution(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{})
	f := e.subscribe(e.hubFeed(t, hub))
	tests := []struct {
		name   string
		sig    websubtest.Signing
		ingest bool
		event  string
	}{
		{"300 sha1", websubtest.Signing{Method: "sha1"}, true, "content"},
		{"300 sha256", websubtest.Signing{Method: "sha256"}, true, "content"},
		{"300 sha384", websubtest.Signing{Method: "sha384"}, true, "content"},
		{"300 sha512", websubtest.Signing{Method: "sha512"}, true, "content"},
		{"301 invalid signature", websubtest.Signing{Method: "sha256", Bad: true}, false, "bad_signature"},
		{"302 no signature", websubtest.Signing{None: true}, false, "bad_signature"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`<feed xmlns="http://www.w3.org/2005/Atom"><title>push %d</title></feed>`, i)
			before, events := len(e.pushes()), e.counter(tt.event)
			ds := hub.Publish(e.ctx, f.WebSubTopic, []byte(body), "application/atom+xml", tt.sig)
			if len(ds) != 1 || ds[0].Err != nil || ds[0].Status != http.StatusAccepted {
				t.Fatalf("deliveries %+v, want one answered 202", ds)
			}
			got := e.pushes()[before:]
			if tt.ingest != (len(got) == 1) || (tt.ingest && (got[0].body != body || got[0].ctype != "application/atom+xml" || got[0].feedID != f.ID)) {
				t.Errorf("ingested %+v, want ingested=%v", got, tt.ingest)
			}
			if d := e.counter(tt.event) - events; d != 1 {
				t.Errorf("event %s counted %v times", tt.event, d)
			}
		})
	}
}

func TestWebSubDeniedPollsAndRetriesInAWeek(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{Deny: true, DenyReason: "not today"})
	ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": serve("application/atom+xml", atomDoc(hub.URL, "BASE/feed"))})
	f := e.feed(ts.URL + "/feed")
	e.poll(f)
	e.run()
	g := e.reload(f.ID)
	if g.WebSubState != store.WebSubStateDenied || store.WebSubActive(g, e.clk.Now()) {
		t.Fatalf("state %q after a denial, want denied (polled as usual)", g.WebSubState)
	}
	if !g.WebSubRenewAt.Equal(subT0.Add(7 * 24 * time.Hour)) {
		t.Errorf("retry at %v, want in a week", g.WebSubRenewAt)
	}
	// Polls in the meantime do not ask again.
	e.clk.Set(subT0.Add(7*24*time.Hour - time.Minute))
	e.poll(g)
	e.run()
	if n := len(hub.Requests()); n != 1 {
		t.Fatalf("hub asked %d times within the week, want 1", n)
	}
	hub.SetOptions(websubtest.Options{})
	e.clk.Set(subT0.Add(7 * 24 * time.Hour))
	e.run()
	reqs := hub.Requests()
	if len(reqs) != 2 || reqs[1].Mode != "subscribe" {
		t.Fatalf("after a week: %d requests, want a second subscribe", len(reqs))
	}
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateActive {
		t.Errorf("state %q after the retry, want active", g.WebSubState)
	}
}

func TestWebSubRenewsAtHalfTheLease(t *testing.T) {
	tests := []struct {
		name      string
		lease     time.Duration // granted; negative: none
		wantRenew time.Duration
	}{
		{"two-hour lease", 2 * time.Hour, time.Hour},
		{"ten-day lease", 10 * 24 * time.Hour, 5 * 24 * time.Hour},
		{"no lease given: daily", -1, 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSubEnv(t)
			hub := websubtest.New(t, websubtest.Options{Lease: tt.lease})
			f := e.subscribe(e.hubFeed(t, hub))
			if !f.WebSubRenewAt.Equal(subT0.Add(tt.wantRenew)) {
				t.Fatalf("renew at %v, want +%s", f.WebSubRenewAt, tt.wantRenew)
			}
			e.clk.Set(subT0.Add(tt.wantRenew - time.Second))
			e.run()
			if n := len(hub.Requests()); n != 1 {
				t.Fatalf("renewed early: %d requests", n)
			}
			e.clk.Set(subT0.Add(tt.wantRenew))
			if n := e.run(); n != 1 {
				t.Fatalf("loop handled %d, want the renewal", n)
			}
			reqs := hub.Requests()
			if len(reqs) != 2 || reqs[1].Mode != "subscribe" || reqs[1].Secret != reqs[0].Secret || reqs[1].Topic != reqs[0].Topic {
				t.Fatalf("renewal %+v, want a subscribe with the same secret and topic", reqs)
			}
			g := e.reload(f.ID)
			if g.WebSubState != store.WebSubStateActive || !g.WebSubRenewAt.Equal(e.clk.Now().Add(tt.wantRenew)) {
				t.Errorf("after renewal: %+v, want active, next renewal in %s", g.WebSub(), tt.wantRenew)
			}
			if got := e.counter("renew"); got != 1 {
				t.Errorf("renew events %v", got)
			}
		})
	}
}

func TestWebSubRenewalRefusedUntilTheLeaseRunsOut(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{Lease: 4 * time.Hour})
	ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": serve("application/atom+xml", atomDoc(hub.URL, "BASE/feed"))})
	f := e.subscribe(e.feed(ts.URL + "/feed"))
	week := subT0.Add(7 * 24 * time.Hour)
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("next_poll_at", week).Error; err != nil {
		t.Fatal(err)
	}
	hub.SetOptions(websubtest.Options{Status: http.StatusServiceUnavailable})
	// Renewal at +2 h refused; the lease has 2 h left: retried in an hour.
	e.clk.Set(subT0.Add(2 * time.Hour))
	e.run()
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateActive || !g.WebSubRenewAt.Equal(e.clk.Now().Add(time.Hour)) {
		t.Fatalf("after a refused renewal: %+v, want active, retry in an hour", g.WebSub())
	}
	e.clk.Set(subT0.Add(3 * time.Hour)) // 1 h left: give up, poll again
	e.run()
	g := e.reload(f.ID)
	if g.WebSubState != store.WebSubStateFailed || store.WebSubActive(g, e.clk.Now()) {
		t.Fatalf("state %q, want failed", g.WebSubState)
	}
	if !g.NextPollAt.Equal(e.clk.Now()) {
		t.Errorf("next poll %s, want now: polling resumes", g.NextPollAt)
	}
	if !g.WebSubRenewAt.Equal(e.clk.Now().Add(24 * time.Hour)) {
		t.Errorf("retry at %v, want in a day", g.WebSubRenewAt)
	}
	if n := len(hub.Requests()); n != 3 {
		t.Errorf("%d hub requests, want subscribe + 2 renewals", n)
	}
}

func TestWebSubHubFailures(t *testing.T) {
	tests := []struct {
		name      string
		opts      websubtest.Options
		advance   time.Duration // then run again
		wantState string
		wantRetry time.Duration
	}{
		{"hub refuses", websubtest.Options{Status: http.StatusBadRequest}, 0, store.WebSubStateFailed, 24 * time.Hour},
		{"hub accepts and never verifies", websubtest.Options{NoVerify: true}, 0, store.WebSubStatePending, time.Hour},
		{"... for an hour", websubtest.Options{NoVerify: true}, time.Hour, store.WebSubStateFailed, 24 * time.Hour},
		{"hub verifies after answering", websubtest.Options{Async: true}, 0, store.WebSubStateActive, 5 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSubEnv(t)
			hub := websubtest.New(t, tt.opts)
			f := e.hubFeed(t, hub)
			e.poll(f)
			e.run()
			hub.Wait()
			if tt.advance > 0 {
				e.clk.Advance(tt.advance)
				e.run()
			}
			g := e.reload(f.ID)
			if g.WebSubState != tt.wantState {
				t.Fatalf("state %q, want %q", g.WebSubState, tt.wantState)
			}
			if !g.WebSubRenewAt.Equal(e.clk.Now().Add(tt.wantRetry)) {
				t.Errorf("next look at %v, want now+%s", g.WebSubRenewAt, tt.wantRetry)
			}
		})
	}
}

func TestWebSubUnsubscribesWhenTheLastSubscriberLeaves(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{})
	f := e.subscribe(e.hubFeed(t, hub))
	// A second reader, then both leave.
	usr, _, _ := e.st.EnsureUser(e.ctx, "second@example.com")
	second, err := e.st.Subscribe(e.ctx, usr.ID, f.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	subs, _ := e.st.ActiveSubscriptionsOfFeed(e.ctx, f.ID)
	if _, err := e.st.EndSubscription(e.ctx, subs[0].ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	e.run()
	if n := len(hub.Requests()); n != 1 {
		t.Fatalf("unsubscribed while someone still follows: %d requests", n)
	}
	if _, err := e.st.EndSubscription(e.ctx, second.ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	e.run()
	reqs := hub.Requests()
	if len(reqs) != 2 || reqs[1].Mode != "unsubscribe" || reqs[1].Topic != f.WebSubTopic || reqs[1].Callback != e.links.WebSubCallback(f.ID, f.WebSubSecret) {
		t.Fatalf("requests %+v, want an unsubscribe for the topic", reqs)
	}
	if g := e.reload(f.ID); g.WebSub() != (store.WebSubFields{}) {
		t.Errorf("websub after the verified unsubscription: %+v, want cleared", g.WebSub())
	}
	if subs := hub.Subscriptions(); len(subs) != 0 {
		t.Errorf("hub still holds %+v", subs)
	}
	if got := e.counter("unsubscribed"); got != 1 {
		t.Errorf("unsubscribed events %v", got)
	}
	// Pushes after that are refused with 410.
	d := hub.PublishTo(e.ctx, e.links.WebSubCallback(f.ID, f.WebSubSecret), reqs[0].Secret, f.WebSubTopic, []byte("<feed/>"), "application/atom+xml", websubtest.Signing{})
	if d.Status != http.StatusGone {
		t.Errorf("push after unsubscribing: %d, want 410", d.Status)
	}
}

func TestWebSubFeedStopsAdvertisingTheHub(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{})
	var mu sync.Mutex
	doc := atomDoc(hub.URL, "BASE/feed")
	ts := topicServer(t, nil, map[string]http.HandlerFunc{"/feed": func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := doc
		mu.Unlock()
		serve("application/atom+xml", d)(w, r)
	}})
	f := e.subscribe(e.feed(ts.URL + "/feed"))
	week := e.clk.Now().Add(7 * 24 * time.Hour)
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("next_poll_at", week).Error; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	doc = `<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><link rel="self" href="BASE/feed"/></feed>`
	mu.Unlock()
	e.clk.Advance(time.Hour)
	e.poll(e.reload(f.ID))
	g := e.reload(f.ID)
	if g.WebSubState != store.WebSubStateLeaving || store.WebSubActive(g, e.clk.Now()) {
		t.Fatalf("state %q, want leaving", g.WebSubState)
	}
	if !g.NextPollAt.Equal(e.clk.Now().Add(15 * time.Minute)) {
		t.Errorf("next poll %s, want in 15 min (not the weekly backup)", g.NextPollAt)
	}
	e.run()
	if reqs := hub.Requests(); len(reqs) != 2 || reqs[1].Mode != "unsubscribe" {
		t.Fatalf("requests %+v, want an unsubscribe", reqs)
	}
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateNone {
		t.Errorf("state %q after unsubscribing, want none", g.WebSubState)
	}
}

// TestWebSubTwoProcessesSendOnce runs two managers on two connections to
// one database: each due feed's request goes out once.
func TestWebSubTwoProcessesSendOnce(t *testing.T) {
	e := newSubEnv(t)
	dsn := storetest.FreshDSN(t, storetest.URL())
	st1 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: e.clk})
	st2 := storetest.OpenDSN(t, dsn, storetest.Options{Clock: e.clk})
	e.st = st1
	hub := websubtest.New(t, websubtest.Options{NoVerify: true})
	const n = 12
	for i := range n {
		f := e.feed(fmt.Sprintf("https://f%d.example/feed", i))
		now := e.clk.Now()
		to := store.WebSubFields{Hub: hub.URL, Topic: f.URL, State: store.WebSubStateWanted, RenewAt: &now}
		if ok, err := st1.SetWebSub(e.ctx, f.ID, f.WebSub(), to, time.Time{}, ""); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	m1, m2 := e.newManager(st1), e.newManager(st2)
	var wg sync.WaitGroup
	for _, m := range []*poller.WebSubManager{m1, m2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.RunOnce(e.ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, r := range hub.Requests() {
		seen[r.Topic]++
	}
	if len(seen) != n {
		t.Errorf("%d topics asked for, want %d", len(seen), n)
	}
	for topic, c := range seen {
		if c != 1 {
			t.Errorf("%s asked %d times", topic, c)
		}
	}
}

// TestWebSubWithThePoller wires the subscriber to the real poller: a poll of
// a farm feed that advertises a hub (Config.AfterPoll = OnPoll) leads to an
// active subscription; the next poll schedules the weekly backup poll; and
// content the hub pushes goes through Poller.Ingest into the items.
func TestWebSubWithThePoller(t *testing.T) {
	e := newSubEnv(t)
	hub, ff, p := e.hubFeedPoller(t, websubtest.Options{})
	e.mu.Lock()
	e.ingest = func(ctx context.Context, id int64, body []byte, ct string) error {
		_, err := p.Ingest(ctx, id, body, ct)
		return err
	}
	e.mu.Unlock()

	f := e.feed(ff.URL())
	if _, err := p.PollFeed(e.ctx, f.ID, "manual"); err != nil {
		t.Fatal(err)
	}
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateWanted || g.WebSubHub != hub.URL || g.WebSubTopic != ff.URL() {
		t.Fatalf("after the first poll: %+v, want wanted at the farm's hub", g.WebSub())
	}
	e.run()
	if g := e.reload(f.ID); !store.WebSubActive(g, e.clk.Now()) {
		t.Fatalf("not active: %+v", g.WebSub())
	}
	e.clk.Advance(10 * time.Minute)
	if _, err := p.PollFeed(e.ctx, f.ID, "manual"); err != nil {
		t.Fatal(err)
	}
	g := e.reload(f.ID)
	if d := g.NextPollAt.Sub(e.clk.Now()); d < 7*24*time.Hour || d > 7*24*time.Hour*11/10 {
		t.Errorf("next poll in %s (%q), want the weekly backup poll", d, g.PollReason)
	}
	if g.WebSubState != store.WebSubStateActive {
		t.Errorf("a backup poll changed the subscription: %+v", g.WebSub())
	}

	// The hub pushes a new version of the feed.
	var items int64
	count := func() int64 {
		if err := e.st.DB.Model(&store.Item{}).Where("feed_id = ?", f.ID).Count(&items).Error; err != nil {
			t.Fatal(err)
		}
		return items
	}
	before := count()
	ff.Publish(farm.Item{ID: "pushed-1", Title: "Pushed post", Link: ff.HomeURL() + "/pushed-1", Content: "<p>hi</p>", Published: e.clk.Now()})
	ds := hub.Publish(e.ctx, g.WebSubTopic, ff.Body(), "application/atom+xml", websubtest.Signing{Method: "sha384"})
	if len(ds) != 1 || ds[0].Status != http.StatusAccepted {
		t.Fatalf("deliveries %+v", ds)
	}
	if got := count(); got != before+1 {
		t.Errorf("items %d after the push, want %d", got, before+1)
	}
	// A forged push adds nothing.
	ff.Publish(farm.Item{ID: "forged", Title: "Forged", Published: e.clk.Now()})
	hub.Publish(e.ctx, g.WebSubTopic, ff.Body(), "application/atom+xml", websubtest.Signing{Bad: true})
	if got := count(); got != before+1 {
		t.Errorf("items %d after a forged push, want %d", got, before+1)
	}
}

func TestWebSubRenewalsNeverVerified(t *testing.T) {
	e := newSubEnv(t)
	hub := websubtest.New(t, websubtest.Options{Lease: 4 * time.Hour})
	f := e.subscribe(e.hubFeed(t, hub))
	week := subT0.Add(7 * 24 * time.Hour)
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("next_poll_at", week).Error; err != nil {
		t.Fatal(err)
	}
	hub.SetOptions(websubtest.Options{NoVerify: true})
	steps := []struct {
		at        time.Duration
		wantState string
		wantDue   bool // next poll brought forward to now
	}{
		{2 * time.Hour, store.WebSubStateActive, false}, // renewal accepted, not verified
		{3 * time.Hour, store.WebSubStateActive, false}, // asked again an hour later
		{4 * time.Hour, store.WebSubStateActive, true},  // lease over: polling resumes, asked again
		{6 * time.Hour, store.WebSubStateFailed, false}, // over for more than an hour: failed
	}
	for _, st := range steps {
		e.clk.Set(subT0.Add(st.at))
		e.run()
		g := e.reload(f.ID)
		if g.WebSubState != st.wantState {
			t.Fatalf("+%s: state %q, want %q", st.at, g.WebSubState, st.wantState)
		}
		if st.wantDue && !g.NextPollAt.Equal(e.clk.Now()) {
			t.Errorf("+%s: next poll %s, want now", st.at, g.NextPollAt)
		}
		if store.WebSubActive(g, e.clk.Now()) != (st.at < 4*time.Hour) {
			t.Errorf("+%s: WebSubActive wrong", st.at)
		}
	}
}

// TestWebSubHubRefusingOurLease: a hub with a 24-hour maximum lease answers
// 400 to hub.lease_seconds=864000. The request is sent again at once
// without a lease, the hub's own lease is honoured, renewals leave the
// lease out from the start, and the verification turns the poll scheduled
// 5 minutes on into the weekly backup poll without another fetch. A 429 is
// not taken for a refused lease.
func TestWebSubHubRefusingOurLease(t *testing.T) {
	const day = 24 * time.Hour
	e := newSubEnv(t)
	hub, ff, p := e.hubFeedPoller(t, websubtest.Options{RefuseLease: true, Lease: day})
	f := e.feed(ff.URL())
	if _, err := p.PollFeed(e.ctx, f.ID, "manual"); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateWanted || g.NextPollAt.Sub(now) > time.Hour {
		t.Fatalf("after the first poll: %+v, next poll in %s; want wanted, polled within the hour", g.WebSub(), g.NextPollAt.Sub(now))
	}

	e.run()
	reqs := hub.Requests()
	if len(reqs) != 2 || reqs[0].LeaseSeconds != "864000" || reqs[0].Status != http.StatusBadRequest ||
		reqs[1].LeaseSeconds != "" || reqs[1].Status != http.StatusAccepted || reqs[1].Secret != reqs[0].Secret {
		t.Fatalf("hub requests %+v; want one with our lease refused, then the same without a lease accepted", reqs)
	}
	g := e.reload(f.ID)
	if !store.WebSubActive(g, now) || !g.WebSubNoLease {
		t.Fatalf("after subscribing: %+v (no lease %v), want active, remembering that the hub takes no lease", g.WebSub(), g.WebSubNoLease)
	}
	if !g.WebSubExpiresAt.Equal(now.Add(day)) || !g.WebSubRenewAt.Equal(now.Add(day/2)) {
		t.Errorf("expires %v renew %v; want the hub's lease: +24 h, renewed at +12 h", g.WebSubExpiresAt, g.WebSubRenewAt)
	}
	if d := g.NextPollAt.Sub(now); d < 7*day || d > 7*day*11/10 || g.PollReason != "WebSub subscription verified: backup poll weekly" {
		t.Errorf("next poll in %s (%q), want the weekly backup poll at once", d, g.PollReason)
	}
	if n := len(ff.Requests()); n != 1 {
		t.Errorf("the feed was fetched %d times, want once", n)
	}
	if a, b := e.counter("lease_refused"), e.counter("subscribe_failed"); a != 1 || b != 0 {
		t.Errorf("lease_refused %v, subscribe_failed %v; want 1 and 0", a, b)
	}

	// The renewal leaves the lease out: no 400 again. A renewal does not
	// move the backup poll.
	backup := g.NextPollAt
	e.clk.Set(now.Add(day / 2))
	if n := e.run(); n != 1 {
		t.Fatalf("loop handled %d feeds at the renewal, want 1", n)
	}
	reqs = hub.Requests()
	if len(reqs) != 3 || reqs[2].LeaseSeconds != "" || reqs[2].Status != http.StatusAccepted {
		t.Fatalf("renewal requests %+v, want one more, without a lease", reqs[2:])
	}
	g = e.reload(f.ID)
	if !store.WebSubActive(g, e.clk.Now()) || !g.WebSubExpiresAt.Equal(e.clk.Now().Add(day)) || !g.NextPollAt.Equal(backup) {
		t.Errorf("after the renewal: %+v, next poll %s; want active for 24 h more, next poll still %s", g.WebSub(), g.NextPollAt, backup)
	}

	// A hub that answers 429 is not asked again without a lease.
	busy := websubtest.New(t, websubtest.Options{Status: http.StatusTooManyRequests})
	f2 := e.hubFeed(t, busy)
	e.poll(f2)
	e.run()
	if reqs := busy.Requests(); len(reqs) != 1 || reqs[0].LeaseSeconds != "864000" {
		t.Errorf("hub answering 429 got %+v, want the one request with our lease", reqs)
	}
	if g := e.reload(f2.ID); g.WebSubState != store.WebSubStateFailed || g.WebSubNoLease {
		t.Errorf("after a 429: %+v (no lease %v), want failed", g.WebSub(), g.WebSubNoLease)
	}
}

// hubFeedPoller starts a test hub with opts, a farm Atom feed that names it
// and a poller whose AfterPoll is the environment's WebSub manager.
func (e *subEnv) hubFeedPoller(t *testing.T, opts websubtest.Options) (*websubtest.Hub, *farm.Feed, *poller.Poller) {
	t.Helper()
	hub := websubtest.New(t, opts)
	fm := farm.New(e.clk)
	t.Cleanup(fm.Close)
	ff := fm.AddFeed(farm.Spec{Format: farm.Atom, ItemCount: 3, Hub: hub.URL, HubPlacement: farm.HubInFeed, ETag: farm.ETagStrong})
	p, err := poller.New(poller.Config{Store: e.st, Owner: "test", Clock: e.clk,
		Fetch: fetcher.Config{AllowPrivate: true, BaseURL: e.web.URL}, AfterPoll: e.mgr.OnPoll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return hub, ff, p
}
