package subscribe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// countedFeed is one feed of a countingServer: what it sends and the
// requests it had.
type countedFeed struct {
	etag, lastMod, cacheControl string
	link                        string   // a Link header field
	items                       []string // item ids, newest first
	reqs                        []countedReq
}

// countedReq is one request to a countedFeed: when (on the fake clock) and
// the validators it carried.
type countedReq struct {
	at       time.Time
	inm, ims string
	status   int
}

// countingServer serves RSS feeds by path and counts each feed's requests
// with their conditional headers; it answers 304 when a request's
// validator matches the one it sends.
type countingServer struct {
	clk   clock.Clock
	base  time.Time // the items' dates count back from it
	srv   *httptest.Server
	mu    sync.Mutex
	feeds map[string]*countedFeed
}

func newCountingServer(t *testing.T, clk clock.Clock, feeds map[string]*countedFeed) *countingServer {
	cs := &countingServer{clk: clk, base: clk.Now(), feeds: feeds}
	cs.srv = httptest.NewServer(cs)
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	f := cs.feeds[r.URL.Path]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	req := countedReq{at: cs.clk.Now(), inm: r.Header.Get("If-None-Match"), ims: r.Header.Get("If-Modified-Since"), status: 200}
	h := w.Header()
	if f.etag != "" {
		h.Set("ETag", f.etag)
	}
	if f.lastMod != "" {
		h.Set("Last-Modified", f.lastMod)
	}
	if f.cacheControl != "" {
		h.Set("Cache-Control", f.cacheControl)
	}
	if f.link != "" {
		h.Set("Link", f.link)
	}
	if (f.etag != "" && req.inm == f.etag) || (f.etag == "" && f.lastMod != "" && req.ims == f.lastMod) {
		req.status = http.StatusNotModified
		f.reqs = append(f.reqs, req)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.reqs = append(f.reqs, req)
	h.Set("Content-Type", "application/rss+xml")
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?><rss version="2.0"><channel><title>Feed %s</title><link>%s/</link>`, r.URL.Path, cs.srv.URL)
	for k, id := range f.items {
		date := cs.base.Add(-time.Duration(k+1) * time.Hour).Format(time.RFC1123Z)
		fmt.Fprintf(&b, `<item><guid>%s%s</guid><title>Post %s</title><link>%s/p/%s</link><pubDate>%s</pubDate></item>`,
			cs.srv.URL, id, id, cs.srv.URL, id, date)
	}
	b.WriteString(`</channel></rss>`)
	_, _ = w.Write([]byte(b.String()))
}

// requests returns a copy of the requests feed path had.
func (cs *countingServer) requests(path string) []countedReq {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return slices.Clone(cs.feeds[path].reqs)
}

// publish puts a new item at the top of feed path with new validators.
func (cs *countingServer) publish(path, id string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	f := cs.feeds[path]
	f.items = append([]string{id}, f.items...)
	f.etag = `"` + id + `"`
}

// TestNoRefetchAfterSubscribing imports feeds from a list and subscribes
// to one more alone, each feed served with other validators and caching
// headers, then runs poller passes on the fake clock: the check's fetch
// counts as the feed's first poll, so no feed is asked again before the
// schedule of a poll says (5 minutes at least, here two hours for the
// feed that asks for it), and then conditionally, with the validators it
// sent. A 304 mails nothing; a feed that published meanwhile mails the new
// post only: the check primed it. The exception is a feed that advertises
// a WebSub hub: it is polled at once, in full, so that the hub is found.
func TestNoRefetchAfterSubscribing(t *testing.T) {
	svc := newService(t)
	clk := svc.Clock.(*clock.Fake)
	lm := clk.Now().Add(-24 * time.Hour).Format(http.TimeFormat)
	cs := newCountingServer(t, clk, map[string]*countedFeed{
		"/etag":    {etag: `"e1"`, items: []string{"a1", "a2"}},
		"/lastmod": {lastMod: lm, items: []string{"b1", "b2"}},
		"/maxage":  {etag: `"m1"`, cacheControl: "max-age=7200", items: []string{"c1"}},
		"/none":    {items: []string{"d1"}},
		"/changes": {etag: `"x1"`, items: []string{"x1", "x2"}},
		"/hub":     {etag: `"h1"`, link: `<https://hub.example/>; rel="hub"`, items: []string{"h1"}},
		"/single":  {etag: `"s1"`, lastMod: lm, items: []string{"s1"}},
	})
	paths := []string{"/etag", "/lastmod", "/maxage", "/none", "/changes", "/hub", "/single"}
	svc.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 30 * time.Second})
	p, err := poller.New(poller.Config{Store: svc.Store, Clock: clk, Owner: "refetch-test",
		Fetch: fetcher.Config{AllowPrivate: true, Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	svc.Baseline = p
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subscribeAll(ctx, t, svc, cs.srv.URL, paths)
	start := clk.Now()
	next := map[string]time.Time{}
	for _, path := range paths {
		if n := len(cs.requests(path)); n != 1 {
			t.Fatalf("%s: %d requests while subscribing, want 1", path, n)
		}
		f, err := svc.Store.FeedByURL(ctx, cs.srv.URL+path)
		if err != nil {
			t.Fatal(err)
		}
		earliest := start.Add(5 * time.Minute)
		if path == "/hub" {
			earliest = start // due at once: its first poll discovers the hub
		}
		if f.PrimedAt == nil || f.NextPollAt.Before(earliest) || (path == "/hub" && f.NextPollAt.After(start)) {
			t.Fatalf("%s after subscribing: primed %v, next poll %v (%s); want primed, next poll at %v or later",
				path, f.PrimedAt, f.NextPollAt, f.PollReason, earliest)
		}
		next[path] = f.NextPollAt
	}
	if d := next["/maxage"].Sub(start); d < 2*time.Hour {
		t.Errorf("/maxage polled again after %v, want its max-age of 2 h", d)
	}
	cs.publish("/changes", "x0")
	passesUntil(ctx, t, p, cs, paths, next, start.Add(3*time.Hour))
	checkSecondPolls(t, cs, paths, lm)
	checkMails(ctx, t, svc.Store, map[string]int64{"/changes": 1}, cs.srv.URL, paths)
}

// subscribeAll imports all of paths on base but the last, which is
// subscribed to alone as the form does, for one person, confirmed.
func subscribeAll(ctx context.Context, t *testing.T, svc *Service, base string, paths []string) {
	t.Helper()
	u, _, err := svc.Store.EnsureUser(ctx, "polite@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var outlines []opml.Outline
	for _, path := range paths[:len(paths)-1] {
		outlines = append(outlines, opml.Outline{XMLURL: base + path})
	}
	rep, err := svc.ImportOPML(ctx, u, outlines, ImportOptions{Confirmed: true, StopOnError: true})
	if err != nil || len(rep.Added) != len(outlines) {
		t.Fatalf("import: %+v, %v; want all %d added", rep, err, len(outlines))
	}
	found, err := svc.FindFeed(ctx, base+paths[len(paths)-1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Subscribe(ctx, Request{Email: u.Email, Feed: found, Confirmed: true}); err != nil {
		t.Fatal(err)
	}
}

// passesUntil runs a poller pass now and at each feed's next poll (and a
// second before it) until end, checking after each that exactly the feeds
// due by then have had a second request, none before its next poll.
func passesUntil(ctx context.Context, t *testing.T, p *poller.Poller, cs *countingServer, paths []string, next map[string]time.Time, end time.Time) {
	t.Helper()
	var stops []time.Time
	for _, at := range next {
		stops = append(stops, at.Add(-time.Second), at)
	}
	slices.SortFunc(stops, func(a, b time.Time) int { return a.Compare(b) })
	clk := cs.clk.(*clock.Fake)
	stops = append([]time.Time{clk.Now()}, append(stops, end)...)
	for _, at := range stops {
		if at.After(clk.Now()) {
			clk.Set(at)
		}
		if _, err := p.PollDue(ctx); err != nil {
			t.Fatalf("pass at %v: %v", at, err)
		}
		for _, path := range paths {
			reqs := cs.requests(path)
			due := !next[path].After(clk.Now())
			if (due && len(reqs) < 2) || (!due && len(reqs) != 1) || (len(reqs) > 1 && reqs[1].at.Before(next[path])) {
				t.Fatalf("at +%v, %s had %d requests (%+v); its next poll was at +%v, so want %s",
					clk.Now().Sub(stops[0]), path, len(reqs), reqs, next[path].Sub(stops[0]),
					map[bool]string{true: "a second one then", false: "the check's alone"}[due])
			}
		}
	}
}

// checkSecondPolls checks that each feed's second request carried the
// validators the feed sent (none for the feed without), and was answered
// 304 but for the feed that changed.
func checkSecondPolls(t *testing.T, cs *countingServer, paths []string, lm string) {
	t.Helper()
	want := map[string]countedReq{
		"/etag":    {inm: `"e1"`, status: 304},
		"/lastmod": {ims: lm, status: 304},
		"/maxage":  {inm: `"m1"`, status: 304},
		"/none":    {status: 200},
		"/changes": {inm: `"x1"`, status: 200},
		"/hub":     {status: 200},
		"/single":  {inm: `"s1"`, ims: lm, status: 304},
	}
	for _, path := range paths {
		got := cs.requests(path)[1]
		if w := want[path]; got.inm != w.inm || got.ims != w.ims || got.status != w.status {
			t.Errorf("%s: second request If-None-Match %q If-Modified-Since %q answered %d; want %q %q %d",
				path, got.inm, got.ims, got.status, w.inm, w.ims, w.status)
		}
	}
}

// checkMails checks how many item emails each feed queued (want; the
// others none).
func checkMails(ctx context.Context, t *testing.T, st *store.Store, want map[string]int64, base string, paths []string) {
	t.Helper()
	for _, path := range paths {
		var n int64
		err := st.DB.WithContext(ctx).Raw(`SELECT COUNT(*) FROM outbox o JOIN items i ON i.id = o.item_id
JOIN feeds f ON f.id = i.feed_id WHERE f.url = ?`, base+path).Scan(&n).Error
		if err != nil {
			t.Fatal(err)
		}
		if n != want[path] {
			t.Errorf("%s: %d emails queued, want %d", path, n, want[path])
		}
	}
}
