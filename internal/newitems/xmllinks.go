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

	type frame struct {
		name string
		base *url.URL
	}
	var stack []frame
	curBase := func() *url.URL {
		if len(stack) == 0 {
			return base
		}
		return stack[len(stack)-1].base
	}
	isHeader := func() bool {
		switch len(stack) {
		case 1:
			return stack[0].name == "feed"
		case 2:
			return stack[1].name == "channel"
		}
		return false
	}

	for range maxHeaderTokens {
		tok, err := d.Token()
		if err != nil {
			return hub, self
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if name == "item" || name == "entry" {
				return hub, self
			}
			if isHeader() && name == "link" {
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
					case r == "hub" && hub == "":
						hub = absURL(curBase(), href)
					case r == "self" && self == "":
						self = absURL(curBase(), href)
					}
				}
				if hub != "" && self != "" {
					return hub, self
				}
			}
			b := curBase()
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
			stack = append(stack, frame{name: name, base: b})
		case xml.EndElement:
			if len(stack) > 0 {
				closing := stack[len(stack)-1].name
				stack = stack[:len(stack)-1]
				if (len(stack) == 0 && closing == "feed") || (len(stack) == 1 && closing == "channel") {
					return hub, self
				}
			}
		}
	}
	return hub, self
}
