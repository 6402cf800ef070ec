package sites_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/testkit/sites"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestHosts: virtual hosts answer their own routes on both schemes, the
// log records each request, and Reset makes a client dial again.
func TestHosts(t *testing.T) {
	s := sites.Start(t)
	s.Host("a.test").HTML("/", "<p>a</p>").Redirect("/old", http.StatusMovedPermanently, "https://b.test/new").
		Status("/gone", http.StatusGone, "gone").File("/?feed=rss2", "application/rss+xml", []byte("<rss/>"))
	s.Host("b.test").HTML("/new", "<p>b</p>").Fallback(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	c := fetcher.New(s.FetcherConfig())
	defer c.CloseIdleConnections()
	get := func(u string) *fetcher.Response {
		t.Helper()
		resp, err := c.Fetch(t.Context(), fetcher.Request{URL: u})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		return resp
	}
	tests := []struct {
		url, body, final string
		status           int
	}{
		{"http://a.test/", "<p>a</p>", "http://a.test/", 200},
		{"https://a.test/old", "<p>b</p>", "https://b.test/new", 200},
		{"https://a.test/gone", "gone", "https://a.test/gone", 410},
		{"https://a.test/?feed=rss2", "<rss/>", "https://a.test/?feed=rss2", 200},
		{"https://a.test/?other=1", "<p>a</p>", "https://a.test/?other=1", 200},
		{"https://a.test/nothing", "404 page not found\n", "https://a.test/nothing", 404},
		{"https://b.test/anything", "", "https://b.test/anything", 418},
	}
	for _, tt := range tests {
		resp := get(tt.url)
		if resp.Status != tt.status || string(resp.Body) != tt.body || resp.FinalURL != tt.final {
			t.Errorf("%s: %d %q at %s, want %d %q at %s", tt.url, resp.Status, resp.Body, resp.FinalURL, tt.status, tt.body, tt.final)
		}
	}
	if n, na, nb := s.Count(""), s.Count("a.test"), s.Count("b.test"); n != 8 || na != 6 || nb != 2 {
		t.Errorf("log counts %d (a %d, b %d), want 8 (6, 2): %+v", n, na, nb, s.Requests())
	}
	if r := s.Requests()[0]; r.Scheme != "http" || r.Host != "a.test" || r.Path != "/" || r.Status != 200 || r.Time.IsZero() {
		t.Errorf("first record %+v", r)
	}

	// After Reset the kept-alive connections are gone: the removed name
	// fails as DNS does, not through a connection kept from before.
	s.Reset()
	if _, err := c.Fetch(t.Context(), fetcher.Request{URL: "https://a.test/"}); fetcher.KindOf(err) != fetcher.KindDNS && fetcher.KindOf(err) != fetcher.KindConnection {
		t.Errorf("after Reset: %v, want a DNS failure (or the closed connection)", err)
	}
	c.CloseIdleConnections()
	if _, err := c.Fetch(t.Context(), fetcher.Request{URL: "https://a.test/"}); fetcher.KindOf(err) != fetcher.KindDNS {
		t.Errorf("after Reset: %v, want a DNS failure", err)
	}
	if n := s.Count(""); n != 0 {
		t.Errorf("log after Reset holds %d requests", n)
	}
}

// TestPortTurnedOff: a client's kept-alive connection to a port turned off
// gets no answer.
func TestPortTurnedOff(t *testing.T) {
	s := sites.Start(t)
	h := s.Host("a.test").HTML("/", "a")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mapped, err := s.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return dialer.DialContext(ctx, network, mapped)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://a.test/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.HTTPOff()
	if resp, err := hc.Get("http://a.test/"); err == nil {
		resp.Body.Close()
		t.Fatalf("port off answered %d", resp.StatusCode)
	}
	if n := s.Count("a.test"); n != 1 {
		t.Errorf("%d requests logged, want 1", n)
	}
}

// TestScenariosBuild: every row parses its old feed and names a target
// when it must recover.
func TestScenariosBuild(t *testing.T) {
	rows, err := sites.Scenarios(testutil.CorpusDir(t))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sc := range rows {
		if names[sc.Name] {
			t.Errorf("two rows named %q", sc.Name)
		}
		names[sc.Name] = true
		k, err := sc.Known()
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		if len(k.Items) == 0 || k.URL != sc.OldURL {
			t.Errorf("%s: known %d items at %q", sc.Name, len(k.Items), k.URL)
		}
		if sc.Recoverable == (sc.WantTo == "") {
			t.Errorf("%s: recoverable %v with target %q", sc.Name, sc.Recoverable, sc.WantTo)
		}
	}
	if len(rows) < 16 {
		t.Errorf("%d rows, want at least the 16 of the issue", len(rows))
	}
}

var dialer net.Dialer
