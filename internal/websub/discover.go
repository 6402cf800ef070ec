package websub

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

func appendUnique(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Discover finds the hubs and the self URL of a fetched topic without
// knowing the URL it was fetched from: relative URLs are resolved against
// the document's own base (xml:base, <base href>) and then against the self
// URL when that is absolute; hubs that stay relative are dropped. Prefer
// DiscoverFrom with the final fetch URL.
func Discover(h http.Header, body []byte, contentType string) (hubs []string, self string) {
	return DiscoverFrom(nil, h, body, contentType)
}

// DiscoverFrom finds the hubs and the self URL of a topic fetched from base
// (the final URL after redirects; may be nil), as WebSub §4 asks:
//
//   - Link header fields first (websub.rocks 100, 104): when they name a hub,
//     the body's hubs are not looked at; likewise for self, separately.
//   - Otherwise the body by content type: <link rel="hub"/"self"> in an HTML
//     document (anywhere, <head> normally; websub.rocks 101), feed-level
//     <link>/<atom:link> in Atom (102), RSS 2.0 and RSS 1.0 (103) — links
//     inside entries/items are ignored — and a JSON Feed's "hubs" (type
//     WebSub) and "feed_url". An unknown or missing content type is sniffed.
//
// Relative URLs are resolved: Link header URLs against base; body URLs
// against xml:base / <base href> and base. Only absolute http and https URLs
// are returned; hubs are de-duplicated, in document order. The self URL is
// the topic to subscribe to, which may differ from the fetched URL
// (websub.rocks 200).
func DiscoverFrom(base *url.URL, h http.Header, body []byte, contentType string) (hubs []string, self string) {
	hh, hs := ParseLinkHeaders(h)
	hdrSelf := resolve(base, hs)
	if !isHTTPURL(hdrSelf) {
		hdrSelf = ""
	}
	// clean resolves what is still relative against the self URL (only
	// without a base) and keeps absolute http(s) URLs, de-duplicated.
	clean := func(list []string, self string) []string {
		var selfURL *url.URL
		if base == nil && self != "" {
			selfURL, _ = url.Parse(self)
		}
		var out []string
		for _, u := range list {
			if u = resolve(base, u); selfURL != nil {
				u = resolve(selfURL, u)
			}
			if isHTTPURL(u) {
				out = appendUnique(out, u)
			}
		}
		return out
	}
	hubs = clean(hh, hdrSelf)
	self = hdrSelf
	if len(hubs) > 0 && self != "" {
		return hubs, self
	}
	bodyHubs, bodySelf := discoverBody(base, body, contentType)
	if self == "" && isHTTPURL(bodySelf) {
		self = bodySelf
	}
	if len(hubs) == 0 {
		hubs = clean(bodyHubs, self)
	}
	return hubs, self
}

// resolve makes ref absolute against base when it can; otherwise it returns
// ref unchanged (an empty ref stays empty).
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	return u.String()
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

type bodyKind int

const (
	kindUnknown bodyKind = iota
	kindHTML
	kindXML
	kindJSON
)

func sniffKind(body []byte, contentType string) bodyKind {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case strings.HasSuffix(mt, "json"):
		return kindJSON
	case strings.Contains(mt, "xml") || strings.Contains(mt, "rss") || strings.Contains(mt, "atom"):
		return kindXML
	}
	// text/plain, application/octet-stream, missing: look at the bytes.
	b := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(b) == 0 {
		return kindUnknown
	}
	if b[0] == '{' {
		return kindJSON
	}
	if b[0] != '<' {
		return kindUnknown
	}
	head := bytes.ToLower(b[:min(len(b), 1024)])
	if bytes.Contains(head, []byte("<html")) || bytes.HasPrefix(head, []byte("<!doctype html")) {
		return kindHTML
	}
	return kindXML
}

func discoverBody(base *url.URL, body []byte, contentType string) (hubs []string, self string) {
	switch sniffKind(body, contentType) {
	case kindHTML:
		return discoverHTML(base, body)
	case kindXML:
		return discoverXML(base, body)
	case kindJSON:
		return discoverJSON(base, body)
	}
	return nil, ""
}

func relTypes(v string) map[string]bool {
	m := map[string]bool{}
	for _, r := range strings.Fields(v) {
		m[strings.ToLower(r)] = true
	}
	return m
}

// discoverHTML reads <link rel=… href=…> elements (and the first <base
// href>) with the HTML5 tokenizer.
func discoverHTML(base *url.URL, body []byte) (hubs []string, self string) {
	z := html.NewTokenizer(bytes.NewReader(body))
	type l struct {
		rels map[string]bool
		href string
	}
	var links []l
	docBase := base
	baseSeen := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		tag := string(name)
		if (tag != "link" && tag != "base") || !hasAttr {
			continue
		}
		var rel, href string
		hrefSeen := false
		for {
			k, v, more := z.TagAttr()
			switch string(k) {
			case "rel":
				rel = string(v)
			case "href":
				if !hrefSeen {
					href, hrefSeen = string(v), true
				}
			}
			if !more {
				break
			}
		}
		if tag == "base" {
			if !baseSeen && hrefSeen {
				baseSeen = true
				if u, err := url.Parse(strings.TrimSpace(href)); err == nil {
					if docBase != nil {
						u = docBase.ResolveReference(u)
					}
					docBase = u
				}
			}
			continue
		}
		if hrefSeen {
			links = append(links, l{relTypes(rel), href})
		}
	}
	for _, x := range links {
		u := resolve(docBase, x.href)
		if x.rels["hub"] {
			hubs = appendUnique(hubs, u)
		}
		if x.rels["self"] && self == "" {
			self = u
		}
	}
	return hubs, self
}

// discoverXML reads feed-level link elements of Atom, RSS 2.0 and RSS 1.0:
// those whose parent is <feed>, <channel>, <rss> or <rdf:RDF>, with a rel
// attribute and an href attribute — the Atom <link> and RSS's <atom:link>.
// (RSS's own <link> carries text, not href, and is ignored.) xml:base is
// honoured. The element's namespace is not checked (feeds get the Atom
// namespace URI wrong often enough), but rel and href must both be there.
// Parsing is lenient and stops quietly at the first error.
func discoverXML(base *url.URL, body []byte) (hubs []string, self string) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charset.NewReaderLabel
	type frame struct {
		name string
		base *url.URL
	}
	var stack []frame
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			cur := base
			if len(stack) > 0 {
				cur = stack[len(stack)-1].base
			}
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1].name
			}
			var rel, href string
			relSeen, hrefSeen := false, false
			for _, a := range t.Attr {
				switch {
				case a.Name.Local == "base" && (a.Name.Space == "xml" || a.Name.Space == "http://www.w3.org/XML/1998/namespace"):
					if u, err := url.Parse(strings.TrimSpace(a.Value)); err == nil {
						if cur != nil {
							u = cur.ResolveReference(u)
						}
						cur = u
					}
				case a.Name.Space == "" && a.Name.Local == "rel":
					rel, relSeen = a.Value, true
				case a.Name.Space == "" && a.Name.Local == "href":
					href, hrefSeen = a.Value, true
				}
			}
			name := strings.ToLower(t.Name.Local)
			stack = append(stack, frame{name: name, base: cur})
			if name != "link" || !relSeen || !hrefSeen {
				continue
			}
			switch parent {
			case "feed", "channel", "rss", "rdf":
			default:
				continue
			}
			rels := relTypes(rel)
			u := resolve(cur, href)
			if rels["hub"] {
				hubs = appendUnique(hubs, u)
			}
			if rels["self"] && self == "" {
				self = u
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return hubs, self
}

// discoverJSON reads a JSON Feed's hubs of type WebSub (any case) and its
// feed_url as self.
func discoverJSON(base *url.URL, body []byte) (hubs []string, self string) {
	var f struct {
		FeedURL string `json:"feed_url"`
		Hubs    []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"hubs"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, ""
	}
	for _, h := range f.Hubs {
		if strings.EqualFold(h.Type, "websub") || strings.EqualFold(h.Type, "pubsubhubbub") {
			hubs = appendUnique(hubs, resolve(base, h.URL))
		}
	}
	return hubs, resolve(base, f.FeedURL)
}
