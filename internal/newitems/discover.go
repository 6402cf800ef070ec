package newitems

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Alternate is a feed that an HTML page links to.
type Alternate struct {
	// URL is absolute (http or https).
	URL string
	// Type is the media type, lowercased and without parameters.
	Type string
	// Title is the link's title attribute, trimmed; often empty.
	Title string
}

// feedTypes are the media types Discover accepts on rel="alternate" links.
var feedTypes = map[string]bool{
	"application/rss+xml":   true,
	"application/atom+xml":  true,
	"application/feed+json": true,
	"application/json":      true,
}

// maxDiscovered bounds how many feeds Discover returns for one page.
const maxDiscovered = 100

// Discover finds the feeds an HTML page advertises (RSS/Atom autodiscovery):
// <link rel="alternate" type="application/rss+xml|atom+xml|feed+json|json"
// href="…" title="…">. It reads the document head only: it stops at </head>
// or <body> (a page with neither is read to the end). rel is a
// space-separated, case-insensitive list that must contain "alternate"; type
// is compared case-insensitively without parameters. hrefs are resolved
// against the page's <base href> (if it comes first) and then baseURL, feed:
// URLs (feed://host/…, feed:https://…) become http(s), anything that is not
// http(s) afterwards is dropped, and fragments are removed. WordPress pages link their REST API as
// rel="alternate" type="application/json" (…/wp-json/…); those are not feeds
// and are skipped. The result is deduplicated by URL, in document order, and
// at most maxDiscovered long.
func Discover(page []byte, baseURL string) []Alternate {
	var out []Alternate
	seen := map[string]bool{}
	scanHead(page, baseURL, func(base *url.URL, attrs map[string]string) bool {
		if !hasToken(attrs["rel"], "alternate") {
			return true
		}
		typ, _, _ := strings.Cut(attrs["type"], ";")
		typ = strings.ToLower(strings.TrimSpace(typ))
		if !feedTypes[typ] {
			return true
		}
		u := resolveFeedURL(base, attrs["href"])
		if u == "" || seen[u] {
			return true
		}
		if typ == "application/json" && strings.Contains(u, "/wp-json/") {
			return true
		}
		seen[u] = true
		out = append(out, Alternate{URL: u, Type: typ, Title: strings.Join(strings.Fields(attrs["title"]), " ")})
		return len(out) < maxDiscovered
	})
	return out
}

// DiscoverHub finds the WebSub hub and self links in an HTML page's head
// (<link rel="hub" href="…">, <link rel="self" href="…">), resolved like
// Discover's. The first of each wins; either may be empty. (The HTTP Link
// header, the other place WebSub allows them, is the fetcher's business.)
func DiscoverHub(page []byte, baseURL string) (hub, self string) {
	scanHead(page, baseURL, func(base *url.URL, attrs map[string]string) bool {
		if hub == "" && hasToken(attrs["rel"], "hub") {
			hub = resolveFeedURL(base, attrs["href"])
		}
		if self == "" && hasToken(attrs["rel"], "self") {
			self = resolveFeedURL(base, attrs["href"])
		}
		return hub == "" || self == ""
	})
	return hub, self
}

// scanHead calls fn for every <link> in the head of page, with its
// attributes (names lowercased) and the base URL in effect, until fn
// returns false.
func scanHead(page []byte, baseURL string, fn func(base *url.URL, attrs map[string]string) bool) {
	base, _ := url.Parse(strings.TrimSpace(baseURL))
	if base != nil && !base.IsAbs() {
		base = nil
	}
	sawBase := false
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Head {
				return
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body:
				return
			case atom.Base:
				attrs := readAttrs(z, hasAttr)
				if !sawBase && strings.TrimSpace(attrs["href"]) != "" {
					sawBase = true
					if u, err := url.Parse(strings.TrimSpace(attrs["href"])); err == nil {
						if base != nil {
							u = base.ResolveReference(u)
						}
						if u.IsAbs() {
							base = u
						}
					}
				}
			case atom.Link:
				if !fn(base, readAttrs(z, hasAttr)) {
					return
				}
			}
		}
	}
}

func readAttrs(z *html.Tokenizer, more bool) map[string]string {
	attrs := map[string]string{}
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		key := strings.ToLower(string(k))
		if _, dup := attrs[key]; !dup { // the first of repeated attributes wins, as in HTML
			attrs[key] = string(v)
		}
	}
	return attrs
}

// hasToken reports whether the space-separated list s contains tok, ignoring case.
func hasToken(s, tok string) bool {
	for _, f := range strings.Fields(s) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// resolveFeedURL makes href absolute against base, maps the feed: pseudo
// scheme to http(s), and returns "" for anything that is not http(s) or
// cannot be made absolute.
func resolveFeedURL(base *url.URL, href string) string {
	href = strings.TrimSpace(href)
	if l := strings.ToLower(href); strings.HasPrefix(l, "feed:") {
		rest := href[len("feed:"):]
		switch {
		case strings.HasPrefix(rest, "//"):
			href = "http:" + rest
		default:
			href = rest
		}
	}
	if href == "" {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return ""
	}
	u.Fragment = ""
	return u.String()
}
