package websub

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
)

func hdr(links ...string) http.Header {
	h := http.Header{}
	for _, l := range links {
		h.Add("Link", l)
	}
	return h
}

func TestParseLinkHeaders(t *testing.T) {
	tests := []struct {
		name     string
		h        http.Header
		wantHubs []string
		wantSelf string
	}{
		{"none", http.Header{}, nil, ""},
		{"websub.rocks 100: two fields", hdr(`<https://websub.rocks/blog/100/abc/hub>; rel="hub"`, `<https://websub.rocks/blog/100/abc>; rel="self"`),
			[]string{"https://websub.rocks/blog/100/abc/hub"}, "https://websub.rocks/blog/100/abc"},
		{"comma separated", hdr(`<https://hub.example/>; rel="hub", <https://example.com/feed>; rel="self"`),
			[]string{"https://hub.example/"}, "https://example.com/feed"},
		{"bare rel", hdr(`<https://hub.example/>; rel=hub,<https://example.com/feed>;rel=self`),
			[]string{"https://hub.example/"}, "https://example.com/feed"},
		{"several rel values", hdr(`<https://example.com/feed>; rel="self alternate", <https://hub.example/>; rel="hub pubsubhubbub"`),
			[]string{"https://hub.example/"}, "https://example.com/feed"},
		{"one link is hub and self", hdr(`<https://x.example/>; rel="self hub"`), []string{"https://x.example/"}, "https://x.example/"},
		{"case insensitive", hdr(`<https://hub.example/>; REL="HUB"`), []string{"https://hub.example/"}, ""},
		{"several hubs, duplicates dropped", hdr(`<https://a.example/>; rel="hub", <https://b.example/>; rel="hub"`, `<https://a.example/>; rel="hub"`),
			[]string{"https://a.example/", "https://b.example/"}, ""},
		{"first self wins", hdr(`<https://one.example/>; rel="self"`, `<https://two.example/>; rel="self"`), nil, "https://one.example/"},
		{"other params and quoted comma", hdr(`<https://hub.example/>; title="a, b; c"; rel="hub"; type="text/html", <https://example.com/feed>; rel="self"`),
			[]string{"https://hub.example/"}, "https://example.com/feed"},
		{"escaped quote in param", hdr(`<https://n.example/>; title="say \"hi\", ok"; rel="next", <https://hub.example/>; rel="hub"`),
			[]string{"https://hub.example/"}, ""},
		{"comma inside URL", hdr(`<https://hub.example/a,b>; rel="hub"`), []string{"https://hub.example/a,b"}, ""},
		{"only first rel counts", hdr(`<https://x.example/>; rel="next"; rel="hub"`), nil, ""},
		{"no rel", hdr(`<https://x.example/>; title="hub"`), nil, ""},
		{"other rels", hdr(`<https://x.example/page2>; rel="next", <https://x.example/>; rel="canonical"`), nil, ""},
		{"garbage then link", hdr(`garbage; rel="hub", <https://hub.example/>; rel="hub"`), []string{"https://hub.example/"}, ""},
		{"unterminated", hdr(`<https://hub.example/; rel="hub"`), nil, ""},
		{"relative kept as written", hdr(`</hub>; rel="hub"`), []string{"/hub"}, ""},
		{"whitespace in brackets", hdr(`< https://hub.example/ >; rel="hub"`), []string{"https://hub.example/"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hubs, self := ParseLinkHeaders(tt.h)
			if !reflect.DeepEqual(hubs, tt.wantHubs) || self != tt.wantSelf {
				t.Errorf("got %q, %q; want %q, %q", hubs, self, tt.wantHubs, tt.wantSelf)
			}
		})
	}
}

const (
	htmlDoc = `<!doctype html>
<html><head><title>Test 101</title>
<link rel="hub" href="https://websub.rocks/blog/101/abc/hub">
<link rel="self" href="https://websub.rocks/blog/101/abc">
<link rel="stylesheet" href="/style.css">
</head><body><a rel="hub" href="https://not-a-hub.example/">no</a></body></html>`

	atomDoc = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Test 102</title>
  <link rel="hub" href="https://websub.rocks/blog/102/abc/hub"/>
  <link rel="self" href="https://websub.rocks/blog/102/abc"/>
  <link rel="alternate" type="text/html" href="https://websub.rocks/"/>
  <entry>
    <title>post</title>
    <link rel="self" href="https://websub.rocks/blog/102/abc/entry-1"/>
    <link rel="hub" href="https://entry-hub.example/"/>
  </entry>
</feed>`

	rssDoc = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
<channel>
  <title>Test 103</title>
  <link>https://websub.rocks/</link>
  <atom:link rel="hub" href="https://websub.rocks/blog/103/abc/hub"/>
  <atom:link rel="self" type="application/rss+xml" href="https://websub.rocks/blog/103/abc"/>
  <item><title>x</title><link>https://websub.rocks/p/1</link></item>
</channel>
</rss>`

	rdfDoc = `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:atom="http://www.w3.org/2005/Atom">
<channel rdf:about="https://example.com/">
  <title>RSS 1.0</title>
  <atom:link rel="hub" href="https://hub.example/"/>
  <atom:link rel="self" href="https://example.com/index.rdf"/>
</channel>
</rdf:RDF>`

	relativeAtom = `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.com/blog/">
  <link rel="hub" href="../hub"/>
  <link rel="self" href="feed.atom"/>
</feed>`

	latin1RSS = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel><title>Caf\xe9</title>" +
		"<atom:link rel=\"hub\" href=\"https://hub.example/\"/><atom:link rel=\"self\" href=\"https://example.com/rss\"/></channel></rss>"

	jsonFeed = `{"version":"https://jsonfeed.org/version/1.1","title":"J","feed_url":"https://example.com/feed.json",
"hubs":[{"type":"rssCloud","url":"https://cloud.example/"},{"type":"WebSub","url":"https://hub.example/"}],"items":[]}`
)

func TestDiscover(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		h        http.Header
		body     string
		ct       string
		wantHubs []string
		wantSelf string
	}{
		{name: "websub.rocks 100 header", h: hdr(`<https://websub.rocks/blog/100/abc/hub>; rel="hub"`, `<https://websub.rocks/blog/100/abc>; rel="self"`),
			body: "plain text", ct: "text/plain",
			wantHubs: []string{"https://websub.rocks/blog/100/abc/hub"}, wantSelf: "https://websub.rocks/blog/100/abc"},
		{name: "websub.rocks 101 html", body: htmlDoc, ct: "text/html; charset=utf-8",
			wantHubs: []string{"https://websub.rocks/blog/101/abc/hub"}, wantSelf: "https://websub.rocks/blog/101/abc"},
		{name: "websub.rocks 102 atom", body: atomDoc, ct: "application/atom+xml",
			wantHubs: []string{"https://websub.rocks/blog/102/abc/hub"}, wantSelf: "https://websub.rocks/blog/102/abc"},
		{name: "websub.rocks 103 rss", body: rssDoc, ct: "application/rss+xml; charset=utf-8",
			wantHubs: []string{"https://websub.rocks/blog/103/abc/hub"}, wantSelf: "https://websub.rocks/blog/103/abc"},
		{name: "websub.rocks 104 header beats body",
			h:    hdr(`<https://websub.rocks/blog/104/abc/hub>; rel="hub"`, `<https://websub.rocks/blog/104/abc>; rel="self"`),
			body: atomDoc, ct: "application/atom+xml",
			wantHubs: []string{"https://websub.rocks/blog/104/abc/hub"}, wantSelf: "https://websub.rocks/blog/104/abc"},
		{name: "header hub, body self", h: hdr(`<https://hub.example/>; rel="hub"`), body: atomDoc, ct: "application/atom+xml",
			wantHubs: []string{"https://hub.example/"}, wantSelf: "https://websub.rocks/blog/102/abc"},
		{name: "websub.rocks 200 self differs from fetched URL", base: "https://websub.rocks/blog/200/abc/fetched",
			body: atomDoc, ct: "application/atom+xml",
			wantHubs: []string{"https://websub.rocks/blog/102/abc/hub"}, wantSelf: "https://websub.rocks/blog/102/abc"},
		{name: "unusable header hub falls back to body", h: hdr(`<javascript:alert(1)>; rel="hub"`), body: atomDoc, ct: "application/atom+xml",
			wantHubs: []string{"https://websub.rocks/blog/102/abc/hub"}, wantSelf: "https://websub.rocks/blog/102/abc"},
		{name: "relative header hub against header self", h: hdr(`</hub>; rel="hub", <https://example.com/feed>; rel="self"`),
			wantHubs: []string{"https://example.com/hub"}, wantSelf: "https://example.com/feed"},
		{name: "rss 1.0", body: rdfDoc, ct: "application/rdf+xml", wantHubs: []string{"https://hub.example/"}, wantSelf: "https://example.com/index.rdf"},
		{name: "xml:base", body: relativeAtom, ct: "application/atom+xml",
			wantHubs: []string{"https://example.com/hub"}, wantSelf: "https://example.com/blog/feed.atom"},
		{name: "relative against base", base: "https://example.com/blog/feed",
			body: `<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="/hub"/><link rel="self" href="feed"/></feed>`, ct: "application/xml",
			wantHubs: []string{"https://example.com/hub"}, wantSelf: "https://example.com/blog/feed"},
		{name: "relative header against base", base: "https://example.com/blog/feed", h: hdr(`</hub>; rel="hub"`, `<feed>; rel="self"`),
			wantHubs: []string{"https://example.com/hub"}, wantSelf: "https://example.com/blog/feed"},
		{name: "relative hub against absolute self without base",
			body:     `<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="/hub"/><link rel="self" href="https://example.com/feed"/></feed>`,
			wantHubs: []string{"https://example.com/hub"}, wantSelf: "https://example.com/feed"},
		{name: "relative without any base is dropped",
			body: `<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="/hub"/><link rel="self" href="feed"/></feed>`},
		{name: "html base element", base: "https://example.com/a/b",
			body: `<html><head><base href="/x/"><link rel="hub" href="hub"><link rel="self" href="https://example.com/feed"></head></html>`, ct: "text/html",
			wantHubs: []string{"https://example.com/x/hub"}, wantSelf: "https://example.com/feed"},
		{name: "html rel tokens and case", body: `<HTML><HEAD><LINK REL="Hub Alternate" HREF="https://hub.example/"><link rel=self href=https://example.com/></HEAD></HTML>`, ct: "text/html",
			wantHubs: []string{"https://hub.example/"}, wantSelf: "https://example.com/"},
		{name: "html without links", body: `<html><head><title>x</title></head></html>`, ct: "text/html"},
		{name: "sniffed html", body: "\n<!DOCTYPE html><html><head><link rel=hub href=https://hub.example/></head></html>",
			wantHubs: []string{"https://hub.example/"}},
		{name: "sniffed atom with text/plain", body: atomDoc, ct: "text/plain",
			wantHubs: []string{"https://websub.rocks/blog/102/abc/hub"}, wantSelf: "https://websub.rocks/blog/102/abc"},
		{name: "latin-1 rss", body: latin1RSS, ct: "application/rss+xml", wantHubs: []string{"https://hub.example/"}, wantSelf: "https://example.com/rss"},
		{name: "json feed", body: jsonFeed, ct: "application/feed+json", wantHubs: []string{"https://hub.example/"}, wantSelf: "https://example.com/feed.json"},
		{name: "sniffed json feed", body: jsonFeed, wantHubs: []string{"https://hub.example/"}, wantSelf: "https://example.com/feed.json"},
		{name: "non-http hub dropped", body: `<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="javascript:alert(1)"/><link rel="hub" href="https://hub.example/"/></feed>`,
			wantHubs: []string{"https://hub.example/"}},
		{name: "broken xml keeps what came before", body: `<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="https://hub.example/"/><entry><<<`,
			wantHubs: []string{"https://hub.example/"}},
		{name: "empty body", ct: "application/atom+xml"},
		{name: "binary body", body: "\x00\x01\x02", ct: "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			if h == nil {
				h = http.Header{}
			}
			var hubs []string
			var self string
			if tt.base == "" {
				hubs, self = Discover(h, []byte(tt.body), tt.ct)
			} else {
				base, err := url.Parse(tt.base)
				if err != nil {
					t.Fatal(err)
				}
				hubs, self = DiscoverFrom(base, h, []byte(tt.body), tt.ct)
			}
			if !reflect.DeepEqual(hubs, tt.wantHubs) || self != tt.wantSelf {
				t.Errorf("got %q, %q; want %q, %q", hubs, self, tt.wantHubs, tt.wantSelf)
			}
		})
	}
}

// TestDiscoverAfterTopicRedirect models websub.rocks 201/202: the topic URL
// redirects (302, 301) and the advertised links are relative, so they must be
// resolved against the final URL, not the one first asked for.
func TestDiscoverAfterTopicRedirect(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusMovedPermanently} {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /old/topic", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/new/topic", code)
		})
		mux.HandleFunc("GET /new/topic", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Link", `<hub>; rel="hub"`)
			w.Header().Add("Link", `<topic>; rel="self"`)
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "ok")
		})
		srv := httptest.NewServer(mux)
		resp, err := srv.Client().Get(srv.URL + "/old/topic")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hubs, self := DiscoverFrom(resp.Request.URL, resp.Header, body, resp.Header.Get("Content-Type"))
		if want := srv.URL + "/new/hub"; len(hubs) != 1 || hubs[0] != want {
			t.Errorf("%d: hubs = %q, want [%q]", code, hubs, want)
		}
		if want := srv.URL + "/new/topic"; self != want {
			t.Errorf("%d: self = %q, want %q", code, self, want)
		}
		srv.Close()
	}
}

// FuzzDiscover: arbitrary headers and bodies never panic, and whatever comes
// out is an absolute http(s) URL.
func FuzzDiscover(f *testing.F) {
	f.Add(`<https://hub.example/>; rel="hub", <https://example.com/>; rel=self`, atomDoc, "application/atom+xml")
	f.Add(`<a>;rel="hub \"x`, htmlDoc, "text/html")
	f.Add(`<,>;;;=;rel=,`, rssDoc, "")
	f.Add("", jsonFeed, "application/json")
	f.Add("", relativeAtom, "text/xml; charset=bogus")
	base, _ := url.Parse("https://example.com/dir/feed")
	f.Fuzz(func(t *testing.T, link, body, ct string) {
		h := http.Header{"Link": {link}}
		ParseLinkHeaders(h)
		for _, b := range []*url.URL{nil, base} {
			hubs, self := DiscoverFrom(b, h, []byte(body), ct)
			for _, u := range append(hubs, self) {
				if u != "" && !isHTTPURL(u) {
					t.Fatalf("not an absolute http(s) URL: %q", u)
				}
			}
		}
	})
}
