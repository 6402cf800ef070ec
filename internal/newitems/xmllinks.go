package newitems

import (
	"bytes"
	"encoding/xml"
	"net/url"
	"strings"
)

// maxHeaderTokens bounds the scan for hub and self links: the feed header
// (everything before the first item) of a real feed is a few dozen tokens.
const maxHeaderTokens = 10000

// scanXMLLinks finds the WebSub hub and self links of an RSS or Atom feed,
// which gofeed's universal Feed drops (it keeps hrefs, not rels). It looks at
// <link rel="…" href="…"> elements that are children of the feed header: the
// Atom <feed> root, or the RSS <channel> (RSS 2.0 <atom:link> and the RSS 1.0
// channel alike). Any namespace is accepted, since the rel and href
// attributes are what matter. rel is a space-separated, case-insensitive
// list; the first matching link wins. The scan stops at the first item or
// entry, at the end of the header, or after maxHeaderTokens tokens, so hub
// links written after the items are not seen. hrefs are resolved against
// xml:base on the root and channel, then against base.
func scanXMLLinks(doc []byte, base *url.URL) (hub, self string) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity

	sc := &linkScanner{base: base}
	for range maxHeaderTokens {
		tok, err := d.Token()
		if err != nil {
			return sc.hub, sc.self
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if name == "item" || name == "entry" {
				return sc.hub, sc.self
			}
			if sc.inHeader() && name == "link" && sc.readLink(t) {
				return sc.hub, sc.self
			}
			sc.stack = append(sc.stack, linkFrame{name: name, base: sc.xmlBase(t)})
		case xml.EndElement:
			if sc.endsHeader() {
				return sc.hub, sc.self
			}
		}
	}
	return sc.hub, sc.self
}

// linkScanner is scanXMLLinks' state: the open elements with their
// xml:base, and the links found so far.
type linkScanner struct {
	base      *url.URL
	stack     []linkFrame
	hub, self string
}

// linkFrame is one open element and the base its children resolve against.
type linkFrame struct {
	name string
	base *url.URL
}

// curBase is the base URL of the innermost open element.
func (sc *linkScanner) curBase() *url.URL {
	if len(sc.stack) == 0 {
		return sc.base
	}
	return sc.stack[len(sc.stack)-1].base
}

// inHeader reports whether the innermost open element is the feed header:
// the Atom <feed> root or the RSS <channel>.
func (sc *linkScanner) inHeader() bool {
	switch len(sc.stack) {
	case 1:
		return sc.stack[0].name == "feed"
	case 2:
		return sc.stack[1].name == "channel"
	}
	return false
}

// readLink takes the hub and self hrefs of a header <link> not found yet,
// and reports whether both are now known.
func (sc *linkScanner) readLink(t xml.StartElement) bool {
	var rel, href string
	for _, a := range t.Attr {
		switch strings.ToLower(a.Name.Local) {
		case "rel":
			rel = a.Value
		case "href":
			href = a.Value
		}
	}
	for _, r := range strings.Fields(strings.ToLower(rel)) {
		switch {
		case r == "hub" && sc.hub == "":
			sc.hub = absURL(sc.curBase(), href)
		case r == "self" && sc.self == "":
			sc.self = absURL(sc.curBase(), href)
		}
	}
	return sc.hub != "" && sc.self != ""
}

// xmlBase returns the base for t's children: its absolute xml:base, if it
// has one, resolved against the current base; else the current base.
func (sc *linkScanner) xmlBase(t xml.StartElement) *url.URL {
	b := sc.curBase()
	for _, a := range t.Attr {
		if a.Name.Local == "base" && (a.Name.Space == "xml" || a.Name.Space == "http://www.w3.org/XML/1998/namespace") {
			if u, err := url.Parse(strings.TrimSpace(a.Value)); err == nil {
				if b != nil {
					u = b.ResolveReference(u)
				}
				if u.IsAbs() {
					b = u
				}
			}
		}
	}
	return b
}

// endsHeader closes the innermost element and reports whether it was the
// feed header (the Atom root or the RSS channel).
func (sc *linkScanner) endsHeader() bool {
	if len(sc.stack) == 0 {
		return false
	}
	closing := sc.stack[len(sc.stack)-1].name
	sc.stack = sc.stack[:len(sc.stack)-1]
	return (len(sc.stack) == 0 && closing == "feed") || (len(sc.stack) == 1 && closing == "channel")
}
