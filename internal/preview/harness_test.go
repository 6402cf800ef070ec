package preview_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// t0 is where the fake clocks start: 11:00 in Paris, after the daily
// digest's 07:00 slot.
var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// post is one post of the test site's feed.
type post struct {
	n         int
	published time.Time
	body      string
}

// site serves an RSS feed of its posts, each post's page (an article
// with a paragraph), and counts the requests for the feed.
type site struct {
	srv      *httptest.Server
	mu       sync.Mutex
	posts    []post
	feedHits atomic.Int64
	title    string
	// gate, when set, holds each feed request until it returns.
	gate func()
}

func newSite(t *testing.T, posts ...post) *site {
	t.Helper()
	s := &site{posts: posts, title: "The Harbour Log"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) feedURL() string { return s.srv.URL + "/feed.xml" }

func (s *site) add(p post) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts = append(s.posts, p)
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/feed.xml":
		s.feedHits.Add(1)
		if s.gate != nil {
			s.gate()
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(s.rss()))
	case r.URL.Path == "/":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><link rel="alternate" type="application/rss+xml" href="/feed.xml"></head><body>home</body></html>`)
	case strings.HasPrefix(r.URL.Path, "/posts/"):
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>%s</title></head><body><nav>menu menu</nav><article><h1>%s</h1>`+
			`<p>The whole article of %s, read from its page, long enough to be the article that readability keeps as the main text of the page.</p>`+
			`<p>A second paragraph with <a href="/more">a relative link</a> and more words, so the extraction has something to hold on to.</p>`+
			`</article><footer>footer</footer></body></html>`, r.URL.Path, r.URL.Path, r.URL.Path)
	case r.URL.Path == "/robots.txt":
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

// rss is the feed document, newest post first.
func (s *site) rss() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?><rss version="2.0"><channel><title>%s</title><link>%s/</link><description>d</description>`, s.title, s.srv.URL)
	for i := len(s.posts) - 1; i >= 0; i-- {
		p := s.posts[i]
		fmt.Fprintf(&b, `<item><title>Post %d</title><link>/posts/%d</link><guid>post-%d</guid><author>ann@example.org (Ann)</author>`+
			`<pubDate>%s</pubDate><description><![CDATA[%s]]></description>`+
			`<enclosure url="/audio/%d.mp3" type="audio/mpeg" length="4242"/></item>`,
			p.n, p.n, p.n, p.published.Format(time.RFC1123Z), p.body, p.n)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// body is a post's HTML: relative links, an image, and what the
// sanitiser removes.
func body(n int) string {
	return fmt.Sprintf(`<p>Post %d tells of the harbour, with <a href="/about">a relative link</a> and <b>bold</b> words.</p>`+
		`<img src="/img/%d.png" alt="boats"><script>alert(%d)</script><p>More of post %d.</p>`, n, n, n, n)
}

// world is one install: a store on a fake clock, links and the preview
// service, with no rate limits unless given.
type world struct {
	clk   *clock.Fake
	st    *store.Store
	links links.Links
	subs  *subscribe.Service
	svc   *preview.Service
}

func newWorld(t *testing.T, lim preview.Limits) *world {
	t.Helper()
	clk := clock.NewFake(t0)
	return newWorldOn(t, storetest.Open(t, storetest.Options{Clock: clk}), clk, lim, true)
}

// newWorldOn builds a world on st; allowPrivate is the guard's setting.
func newWorldOn(t *testing.T, st *store.Store, clk *clock.Fake, lim preview.Limits, allowPrivate bool) *world {
	t.Helper()
	sign, err := token.NewSigner([]byte("preview-test-secret-0123456789ab"))
	if err != nil {
		t.Fatal(err)
	}
	lk := links.New("https://feedmail.example.com", sign, "feedmail@example.com")
	fcfg := fetcher.Config{BaseURL: lk.Base, AllowPrivate: allowPrivate}
	subs := &subscribe.Service{Store: st, Links: lk, Clock: clk, Fetch: fetcher.New(fcfg)}
	svc := preview.New(preview.Config{Subs: subs, Sender: mailer.Sender{Address: "feedmail@example.com"}, Links: lk,
		Articles: article.NewReader(fcfg, clk), Limits: lim})
	return &world{clk: clk, st: st, links: lk, subs: subs, svc: svc}
}

// captured keeps every message handed to it.
type captured struct {
	mu   sync.Mutex
	msgs []*mail.Msg
}

func (c *captured) Send(_ context.Context, msgs []*mail.Msg) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msgs...)
	return make([]error, len(msgs))
}

func (c *captured) Close() error { return nil }

func (c *captured) all() []*mail.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*mail.Msg(nil), c.msgs...)
}
