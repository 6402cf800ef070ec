package recovery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
)

// web is a fake Fetch: each URL answers its canned response; a URL that
// redirects names its hops. Unknown URLs fail as DNS does.
type web map[string]*fetcher.Response

func (w web) fetch(_ context.Context, u string) (*fetcher.Response, error) {
	r, ok := w[u]
	if !ok {
		return &fetcher.Response{RequestURL: u, FinalURL: u}, &fetcher.Error{Kind: fetcher.KindDNS, URL: u, Err: fmt.Errorf("no such host")}
	}
	cp := *r
	cp.RequestURL = u
	if cp.FinalURL == "" {
		cp.FinalURL = u
	}
	return &cp, nil
}

func rss(site string, guids ...string) *fetcher.Response {
	var b strings.Builder
	fmt.Fprintf(&b, `<rss version="2.0"><channel><title>Blog</title><link>%s</link>`, site)
	for i, g := range guids {
		fmt.Fprintf(&b, `<item><title>Post %s</title><guid isPermaLink="false">%s</guid><pubDate>Mon, 0%d Jan 2024 10:00:00 GMT</pubDate></item>`, g, g, i+1)
	}
	b.WriteString(`</channel></rss>`)
	return &fetcher.Response{Status: 200, ContentType: "application/rss+xml", Body: []byte(b.String())}
}

func htmlPage(s string) *fetcher.Response {
	return &fetcher.Response{Status: 200, ContentType: "text/html", Body: []byte(s)}
}

func via(r *fetcher.Response, final string, hops ...fetcher.Hop) *fetcher.Response {
	cp := *r
	cp.FinalURL, cp.Redirects = final, hops
	return &cp
}

const alt = `<link rel="alternate" type="application/rss+xml" href="%s">`

func TestAttemptRules(t *testing.T) {
	known := Known{URL: "https://blog.test/feed.xml", SiteURL: "https://blog.test/", Title: "Blog",
		Items: []KnownItem{{GUID: "a"}, {GUID: "b"}}, NewestItemDate: time.Date(2024, 1, 2, 10, 0, 0, 0, time.UTC)}
	notFound := &fetcher.Response{Status: 404}
	tests := []struct {
		name    string
		k       func(Known) Known
		w       web
		budget  int
		verdict string
		to      string
		check   func(t *testing.T, r Result)
	}{{
		name: "a temporary redirect to the very feed is not followed",
		w: web{"https://blog.test/feed.xml": notFound,
			"https://blog.test/":        htmlPage(fmt.Sprintf(alt, "/new.xml")),
			"https://blog.test/new.xml": via(rss("https://blog.test/", "a", "b"), "https://blog.test/real.xml", fetcher.Hop{Status: 302, From: "https://blog.test/new.xml", To: "https://blog.test/real.xml"})},
		verdict: None,
		check: func(t *testing.T, r Result) {
			if c := find(r, "https://blog.test/new.xml"); c == nil || c.Verdict != "rejected: reached through a temporary redirect" {
				t.Errorf("candidate %+v", c)
			}
		},
	}, {
		name: "the old URL permanently redirected to another domain: moved there",
		w: web{"https://blog.test/feed.xml": via(rss("https://newblog.test/", "a", "b", "c"), "https://newblog.test/feed.xml",
			fetcher.Hop{Status: 301, From: "https://blog.test/feed.xml", To: "https://newblog.test/feed.xml"})},
		verdict: Moved, to: "https://newblog.test/feed.xml",
		check: func(t *testing.T, r Result) {
			if len(r.RedirectedTo) != 1 || r.RedirectedTo[0] != "newblog.test" {
				t.Errorf("RedirectedTo %q", r.RedirectedTo)
			}
		},
	}, {
		name: "another domain the old host never redirected to: rejected unasked, even with posts in common",
		w: web{"https://blog.test/feed.xml": notFound, "https://blog.test/": htmlPage(fmt.Sprintf(alt, "https://copy.test/feed.xml")),
			"https://copy.test/feed.xml": rss("https://blog.test/", "a", "b")},
		verdict: None,
		check: func(t *testing.T, r Result) {
			if c := find(r, "https://copy.test/feed.xml"); c == nil || c.Verdict != "rejected: another site" || c.Resp != nil {
				t.Errorf("candidate %+v", c)
			}
			for _, u := range r.Tried {
				if strings.Contains(u, "copy.test") {
					t.Errorf("asked %s", u)
				}
			}
		},
	}, {
		name: "an http self link without posts in common",
		k:    func(k Known) Known { k.SelfURL = "http://blog.test/rss"; return k },
		w: web{"https://blog.test/feed.xml": notFound, "http://blog.test/rss": rss("https://blog.test/", "x", "y"),
			"https://blog.test/": htmlPage("<p>home</p>")},
		verdict: None,
		check: func(t *testing.T, r Result) {
			if c := find(r, "http://blog.test/rss"); c == nil || !strings.Contains(c.Verdict, "self link to http") {
				t.Errorf("candidate %+v", c)
			}
		},
	}, {
		name:    "the old URL answers its feed: nothing to look for",
		w:       web{"https://blog.test/feed.xml": rss("https://blog.test/", "a", "b")},
		verdict: None,
		check: func(t *testing.T, r Result) {
			if r.Old != "feed" || r.Requests != 1 {
				t.Errorf("old %q after %d requests", r.Old, r.Requests)
			}
		},
	}, {
		name: "frozen: a copy of the old feed with nothing newer",
		k:    func(k Known) Known { k.Frozen, k.SelfURL = true, k.URL; return k },
		w: web{"https://blog.test/": htmlPage(fmt.Sprintf(alt, "/copy.xml")),
			"https://blog.test/copy.xml": rss("https://blog.test/", "a", "b")},
		verdict: None,
		check: func(t *testing.T, r Result) {
			if c := find(r, "https://blog.test/copy.xml"); c == nil || c.Verdict != "rejected: no newer posts" {
				t.Errorf("candidate %+v", c)
			}
			for _, u := range r.Tried {
				if u == "https://blog.test/feed.xml" {
					t.Errorf("a frozen feed's URL was asked again: tried %q", r.Tried)
				}
			}
		},
	}, {
		name: "the budget holds, redirect hops included",
		w: web{"https://blog.test/feed.xml": via(notFound, "https://blog.test/x", fetcher.Hop{Status: 302, From: "https://blog.test/feed.xml", To: "https://blog.test/x"}),
			"https://blog.test/": via(notFound, "https://blog.test/x", fetcher.Hop{Status: 302, From: "https://blog.test/", To: "https://blog.test/x"})},
		budget:  3,
		verdict: None,
		check: func(t *testing.T, r Result) {
			if r.Requests > 3 || len(r.Tried) != r.Requests {
				t.Errorf("%d requests, tried %q", r.Requests, r.Tried)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := known
			if tt.k != nil {
				k = tt.k(k)
			}
			r := Attempt(t.Context(), k, tt.w.fetch, tt.budget)
			if r.Verdict != tt.verdict || r.To != tt.to {
				t.Errorf("verdict %q %q, want %q %q; candidates %+v", r.Verdict, r.To, tt.verdict, tt.to, r.Candidates)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestAttemptStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	n := 0
	fetch := func(context.Context, string) (*fetcher.Response, error) {
		n++
		cancel()
		return &fetcher.Response{Status: 404}, nil
	}
	r := Attempt(ctx, Known{URL: "https://blog.test/feed.xml"}, fetch, 0)
	if n != 1 || r.Verdict != None {
		t.Fatalf("%d fetches after the context ended, verdict %q", n, r.Verdict)
	}
}

func find(r Result, u string) *Candidate {
	for i := range r.Candidates {
		if r.Candidates[i].URL == u {
			return &r.Candidates[i]
		}
	}
	return nil
}
