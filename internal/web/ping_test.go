package web_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/poller"
)

// setFeed changes columns of a feed directly (what a poll would have written).
func (e *wsEnv) setFeed(id int64, cols map[string]any) {
	e.t.Helper()
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", id).Updates(cols).Error; err != nil {
		e.t.Fatal(err)
	}
}

func TestPingSchedulesEarlyPollOncePerMinute(t *testing.T) {
	e := newWSEnv(t)
	f := e.feed("https://blog.example/feed.xml", true)
	later := wsT0.Add(3 * time.Hour)
	e.setFeed(f.ID, map[string]any{"next_poll_at": later, "site_url": "https://blog.example/"})

	steps := []struct {
		name     string
		advance  time.Duration
		method   string
		url      string
		wantCode int
		wantText string
		wantDue  bool // next_poll_at moved to now
	}{
		{"GET /ping with the feed URL", 0, "GET", f.URL, 200, "poll scheduled now", true},
		{"second ping within the minute", 30 * time.Second, "GET", f.URL, 200, "already pinged within the last minute; this ping changes nothing", false},
		{"POST a minute later, by site URL without slash", 30 * time.Second, "POST", "https://blog.example", 200, "poll scheduled now", true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e.clk.Advance(st.advance)
			e.setFeed(f.ID, map[string]any{"next_poll_at": later})
			var code int
			var body string
			if st.method == "GET" {
				code, body, _ = e.do("GET", e.ts.URL+"/ping?url="+url.QueryEscape(st.url), nil, nil)
			} else {
				code, body, _ = e.do("POST", e.ts.URL+"/ping", strings.NewReader(url.Values{"url": {st.url}}.Encode()),
					http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
			}
			if code != st.wantCode || !strings.Contains(body, st.wantText) {
				t.Fatalf("got %d %q, want %d containing %q", code, body, st.wantCode, st.wantText)
			}
			g := e.reload(f.ID)
			if st.wantDue != g.NextPollAt.Equal(e.clk.Now()) {
				t.Errorf("next_poll_at %s (now %s), want due now: %v", g.NextPollAt, e.clk.Now(), st.wantDue)
			}
			if g.LastPingAt == nil {
				t.Error("last_ping_at not recorded")
			}
		})
	}
}

func TestPingAnswers(t *testing.T) {
	e := newWSEnv(t)
	e.feed("https://followed.example/feed", true)
	e.feed("https://lonely.example/feed", false)
	gone := e.feed("https://gone.example/feed", true)
	e.setFeed(gone.ID, map[string]any{"state": store.FeedGone})
	tests := []struct {
		query    string
		wantCode int
		wantText string
	}{
		{"url=" + url.QueryEscape("https://followed.example/feed"), 200, "poll scheduled now"},
		{"url=" + url.QueryEscape("https://unknown.example/feed"), 404, "feedmail does not poll this URL"},
		{"url=" + url.QueryEscape("https://lonely.example/feed"), 404, "nobody follows this feed here"},
		{"url=" + url.QueryEscape("https://gone.example/feed"), 410, "410 Gone"},
		{"", 400, "give the URL"},
		{"url=ftp%3A%2F%2Fx.example%2F", 400, "give the URL"},
		{"url=not+a+url", 400, "give the URL"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, body, hdr := e.do("GET", e.ts.URL+"/ping?"+tt.query, nil, nil)
			if code != tt.wantCode || !strings.Contains(body, tt.wantText) {
				t.Errorf("got %d %q, want %d containing %q", code, body, tt.wantCode, tt.wantText)
			}
			if !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
				t.Errorf("content type %q", hdr.Get("Content-Type"))
			}
		})
	}
}

func TestPingRateLimitPerIP(t *testing.T) {
	e := newWSEnv(t, func(o *web.PingOptions) { o.PerIP = web.Limit{Every: time.Minute, Burst: 2} })
	e.feed("https://r.example/feed", true)
	target := e.ts.URL + "/ping?url=" + url.QueryEscape("https://r.example/feed")
	for i, want := range []int{200, 200, 429} {
		code, body, hdr := e.do("GET", target, nil, nil)
		if code != want {
			t.Fatalf("ping %d: %d %q, want %d", i+1, code, body, want)
		}
		if code == 429 && hdr.Get("Retry-After") != "60" {
			t.Errorf("Retry-After %q, want 60", hdr.Get("Retry-After"))
		}
	}
	// XML-RPC shares the bucket and answers flerror.
	r := rpcDo(t, e, rpcCall("weblogUpdates.ping", "Blog", "https://r.example/feed"))
	if r.fault != nil || !r.flerror || !strings.Contains(r.message, "Too many pings") {
		t.Errorf("RPC2 over the limit: %+v", r)
	}
	e.clk.Advance(time.Minute)
	if code, _, _ := e.do("GET", target, nil, nil); code != 200 {
		t.Errorf("after a minute: %d, want 200", code)
	}
}

// rpcResult is a parsed methodResponse.
type rpcResult struct {
	flerror bool
	message string
	fault   *int
	fstring string
}

func rpcCall(method string, params ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><methodCall><methodName>` + method + `</methodName><params>`)
	for _, p := range params {
		b.WriteString(`<param><value><string>`)
		_ = xml.EscapeText(&b, []byte(p))
		b.WriteString(`</string></value></param>`)
	}
	b.WriteString(`</params></methodCall>`)
	return b.String()
}

func rpcDo(t *testing.T, e *wsEnv, body string) rpcResult {
	t.Helper()
	code, out, hdr := e.do("POST", e.ts.URL+"/RPC2", strings.NewReader(body), http.Header{"Content-Type": {"text/xml"}})
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/xml") {
		t.Fatalf("RPC2 answered %d %s: %s", code, hdr.Get("Content-Type"), out)
	}
	type member struct {
		Name string `xml:"name"`
		Bool *int   `xml:"value>boolean"`
		Int  *int   `xml:"value>int"`
		Str  string `xml:"value>string"`
	}
	var resp struct {
		XMLName xml.Name `xml:"methodResponse"`
		Params  []member `xml:"params>param>value>struct>member"`
		Fault   []member `xml:"fault>value>struct>member"`
	}
	if err := xml.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("not a methodResponse: %v\n%s", err, out)
	}
	var r rpcResult
	for _, m := range resp.Params {
		switch m.Name {
		case "flerror":
			if m.Bool == nil {
				t.Fatalf("flerror is not a boolean: %s", out)
			}
			r.flerror = *m.Bool == 1
		case "message":
			r.message = m.Str
		}
	}
	for _, m := range resp.Fault {
		switch m.Name {
		case "faultCode":
			r.fault = m.Int
		case "faultString":
			r.fstring = m.Str
		}
	}
	if len(resp.Params) == 0 && r.fault == nil {
		t.Fatalf("neither params nor fault: %s", out)
	}
	return r
}

func TestXMLRPCPing(t *testing.T) {
	e := newWSEnv(t)
	a := e.feed("https://site.example/feed.xml", true)
	e.setFeed(a.ID, map[string]any{"site_url": "https://site.example/"})
	b := e.feed("https://other.example/rss", true)
	tests := []struct {
		name        string
		body        string
		wantFault   int
		wantFlerror bool
		wantMsg     string
		due         int64 // feed made due now
	}{
		{name: "weblogUpdates.ping with the site URL", body: rpcCall("weblogUpdates.ping", "My Blog", "https://site.example/"),
			wantMsg: "poll scheduled now", due: a.ID},
		{name: "weblogUpdates.ping again within the minute", body: rpcCall("weblogUpdates.ping", "My Blog", "https://site.example"),
			wantMsg: "changes nothing"},
		{name: "extendedPing with the feed URL", body: rpcCall("weblogUpdates.extendedPing", "Other", "https://other.example/", "https://other.example/changed", "https://other.example/rss", "tag1|tag2"),
			wantMsg: "poll scheduled now", due: b.ID},
		{name: "untyped string values", body: `<?xml version="1.0"?><methodCall><methodName>weblogUpdates.ping</methodName><params><param><value>x</value></param><param><value>https://nowhere.example/</value></param></params></methodCall>`,
			wantFlerror: true, wantMsg: "does not poll this URL"},
		{name: "unknown site", body: rpcCall("weblogUpdates.ping", "Nope", "https://unknown.example/"), wantFlerror: true, wantMsg: "does not poll this URL"},
		{name: "not a URL", body: rpcCall("weblogUpdates.ping", "Nope", "javascript:alert(1)"), wantFlerror: true, wantMsg: "No usable URL"},
		{name: "not XML", body: "ping please", wantFault: -32700},
		{name: "truncated", body: `<?xml version="1.0"?><methodCall><methodName>weblogUpdates.ping</methodName><params>`, wantFault: -32700},
		{name: "empty", body: "", wantFault: -32700},
		{name: "another document", body: `<?xml version="1.0"?><rss version="2.0"/>`, wantFault: -32600},
		{name: "unknown method", body: rpcCall("system.listMethods"), wantFault: -32601},
		{name: "too few parameters", body: rpcCall("weblogUpdates.ping", "only a name"), wantFault: -32602},
		{name: "extendedPing too few parameters", body: rpcCall("weblogUpdates.extendedPing", "n", "https://site.example/"), wantFault: -32602},
		{name: "non-string parameter", body: `<?xml version="1.0"?><methodCall><methodName>weblogUpdates.ping</methodName><params><param><value><int>4</int></value></param><param><value><string>https://site.example/</string></value></param></params></methodCall>`, wantFault: -32602},
		{name: "entity expansion refused", body: `<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><methodCall><methodName>&b;</methodName></methodCall>`, wantFault: -32700},
		{name: "too large", body: `<?xml version="1.0"?><methodCall><methodName>` + strings.Repeat("x", 70<<10) + `</methodName></methodCall>`, wantFault: -32700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			later := e.clk.Now().Add(time.Hour)
			for _, id := range []int64{a.ID, b.ID} {
				e.setFeed(id, map[string]any{"next_poll_at": later})
			}
			r := rpcDo(t, e, tt.body)
			if tt.wantFault != 0 {
				if r.fault == nil || *r.fault != tt.wantFault || r.fstring == "" {
					t.Fatalf("fault %v %q, want %d", r.fault, r.fstring, tt.wantFault)
				}
				return
			}
			if r.fault != nil {
				t.Fatalf("unexpected fault %d %q", *r.fault, r.fstring)
			}
			if r.flerror != tt.wantFlerror || !strings.Contains(r.message, tt.wantMsg) {
				t.Errorf("flerror=%v message=%q, want %v containing %q", r.flerror, r.message, tt.wantFlerror, tt.wantMsg)
			}
			for _, id := range []int64{a.ID, b.ID} {
				due := e.reload(id).NextPollAt.Equal(e.clk.Now())
				if due != (id == tt.due) {
					t.Errorf("feed %d due now: %v", id, due)
				}
			}
		})
	}
}

func TestPingBlacklistedFeed(t *testing.T) {
	tests := []struct {
		name      string
		poll      func(e *wsEnv, id int64) error // what the poll does
		wantState string
		wantText  string
	}{
		{"poll fetches fine and lifts it", func(e *wsEnv, id int64) error {
			e.setFeed(id, map[string]any{"state": store.FeedActive, "last_success_at": e.clk.Now(), "consecutive_errors": 0, "errors_since": nil})
			return nil
		}, store.FeedActive, "taken off the blacklist"},
		{"poll fetches fine but leaves the state to us", func(e *wsEnv, id int64) error {
			e.setFeed(id, map[string]any{"last_success_at": e.clk.Now(), "consecutive_errors": 0})
			return nil
		}, store.FeedActive, "taken off the blacklist"},
		{"poll fails: stays blacklisted", func(e *wsEnv, id int64) error {
			e.setFeed(id, map[string]any{"last_error": "500 Internal Server Error", "consecutive_errors": 41})
			return nil
		}, store.FeedBlacklisted, "still does not fetch fine (500 Internal Server Error)"},
		{"poller busy", func(e *wsEnv, id int64) error { return errors.New("feed is being polled by another worker") },
			store.FeedBlacklisted, "stays blacklisted"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newWSEnv(t)
			f := e.feed(fmt.Sprintf("https://bl%d.example/feed", i), true)
			e.setFeed(f.ID, map[string]any{"state": store.FeedBlacklisted, "consecutive_errors": 40,
				"errors_since": wsT0.Add(-91 * 24 * time.Hour), "last_success_at": wsT0.Add(-92 * 24 * time.Hour), "last_error": "timeout"})
			e.pollNow = func(ctx context.Context, id int64, reason string) error { return tt.poll(e, id) }
			code, body, _ := e.do("GET", e.ts.URL+"/ping?url="+url.QueryEscape(f.URL), nil, nil)
			if code != 200 || !strings.Contains(body, tt.wantText) {
				t.Fatalf("got %d %q, want 200 containing %q", code, body, tt.wantText)
			}
			if g := e.reload(f.ID); g.State != tt.wantState {
				t.Errorf("state %q, want %q", g.State, tt.wantState)
			}
			// A second ping within the minute does not poll again.
			code, body, _ = e.do("GET", e.ts.URL+"/ping?url="+url.QueryEscape(f.URL), nil, nil)
			e.mu.Lock()
			polls := len(e.polls)
			e.mu.Unlock()
			if tt.wantState == store.FeedBlacklisted && (polls != 1 || !strings.Contains(body, "changes nothing")) {
				t.Errorf("second ping: %d %q, %d polls; want one poll only", code, body, polls)
			}
		})
	}
}

// TestPingRevivesBlacklistedFeedWithThePoller pings blacklisted farm feeds
// with the real poller behind PollNow: the one that fetches fine is taken
// off the blacklist, the one that still fails stays on it.
func TestPingRevivesBlacklistedFeedWithThePoller(t *testing.T) {
	tests := []struct {
		name      string
		status    int // farm answer; 0 serves the feed
		wantState string
		wantText  string
	}{
		{"fetches fine", 0, store.FeedActive, "taken off the blacklist"},
		{"still 500", http.StatusInternalServerError, store.FeedBlacklisted, "stays blacklisted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newWSEnv(t)
			fm := farm.New(e.clk)
			t.Cleanup(fm.Close)
			ff := fm.AddFeed(farm.Spec{Format: farm.RSS, ItemCount: 2, Status: tt.status})
			p, err := poller.New(poller.Config{Store: e.st, Owner: "ping-test", Clock: e.clk,
				Fetch: fetcher.Config{AllowPrivate: true}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			e.pollNow = func(ctx context.Context, id int64, reason string) error {
				_, err := p.PollFeed(ctx, id, "ping")
				return err
			}
			f := e.feed(ff.URL(), true)
			e.setFeed(f.ID, map[string]any{"state": store.FeedBlacklisted, "consecutive_errors": 40,
				"errors_since": wsT0.Add(-91 * 24 * time.Hour), "last_success_at": wsT0.Add(-92 * 24 * time.Hour),
				"next_poll_at": wsT0.Add(24 * time.Hour)})
			code, body, _ := e.do("POST", e.ts.URL+"/ping?url="+url.QueryEscape(ff.URL()), nil, nil)
			if code != 200 || !strings.Contains(body, tt.wantText) {
				t.Fatalf("got %d %q, want 200 containing %q", code, body, tt.wantText)
			}
			g := e.reload(f.ID)
			if g.State != tt.wantState {
				t.Errorf("state %q (%s), want %q", g.State, g.PollReason, tt.wantState)
			}
			if n := len(ff.Requests()); n != 1 {
				t.Errorf("farm saw %d requests, want 1", n)
			}
		})
	}
}

// TestPingDuringPollIsQueued pings a feed while the real poller is fetching
// it (the feed's server holds the request): the ping is queued (202), a
// second ping within the minute adds nothing, and once the poll is written
// exactly one more poll follows at once, conditional, and then none.
func TestPingDuringPollIsQueued(t *testing.T) {
	e := newWSEnv(t)
	const etag = `"v1"`
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var conditional []bool // per request: it carried If-None-Match
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conditional = append(conditional, r.Header.Get("If-None-Match") == etag)
		first := len(conditional) == 1
		mu.Unlock()
		if first {
			entered <- struct{}{}
			<-release
		}
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = io.WriteString(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Held</title>
<link>https://held.example/</link><item><guid>a</guid><title>A</title><link>https://held.example/a</link></item>
</channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	requests := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(conditional)
	}
	p, err := poller.New(poller.Config{Store: e.st, Owner: "held-poll", Clock: e.clk,
		Fetch: fetcher.Config{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	f := e.feed(srv.URL+"/feed.xml", true)
	ping := func() (int, string) {
		code, body, _ := e.do("GET", e.ts.URL+"/ping?url="+url.QueryEscape(f.URL), nil, nil)
		return code, body
	}

	done := make(chan error, 1)
	go func() {
		_, err := p.PollDue(e.ctx)
		done <- err
	}()
	<-entered // the first poll's request is at the server
	if code, body := ping(); code != http.StatusAccepted || !strings.Contains(body, "this ping is queued") {
		t.Fatalf("ping during the poll: %d %q, want 202 saying it is queued", code, body)
	}
	e.clk.Advance(30 * time.Second)
	if code, body := ping(); code != http.StatusOK || !strings.Contains(body, "already pinged within the last minute") {
		t.Fatalf("second ping within the minute: %d %q", code, body)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g := e.reload(f.ID)
	if !g.NextPollAt.Equal(e.clk.Now()) || g.PollReason != store.PingRepollReason || g.PingQueuedAt != nil {
		t.Fatalf("after the poll: next %s (%q), queued %v; want due now by the queued ping", g.NextPollAt, g.PollReason, g.PingQueuedAt)
	}
	// The queued ping's poll, at once; then nothing is due.
	for i, want := range []int{1, 0} {
		n, err := p.PollDue(e.ctx)
		if err != nil || n != want {
			t.Fatalf("pass %d after the poll: %d feeds (%v), want %d", i+1, n, err, want)
		}
	}
	if got := requests(); len(got) != 2 || got[0] || !got[1] {
		t.Fatalf("requests (conditional?) %v, want [false true]: the held poll and one conditional poll", got)
	}
	if g := e.reload(f.ID); g.LastStatus != http.StatusNotModified || !g.NextPollAt.After(e.clk.Now()) || g.PollReason == store.PingRepollReason {
		t.Errorf("after the queued poll: status %d, next %s (%q)", g.LastStatus, g.NextPollAt, g.PollReason)
	}
}
