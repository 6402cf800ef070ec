package mailer

import (
	"html"
	"net/url"
	"strings"

	nethtml "golang.org/x/net/html"
)

// urlAttrs are the attributes holding a single URL that resolveURLs makes
// absolute. srcset (a list) is handled separately.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "cite": true, "poster": true, "background": true,
	"action": true, "formaction": true, "data": true, "longdesc": true, "lowsrc": true,
}

// resolveURLs rewrites relative URLs in start tags to absolute ones against
// base, removes tracking pixels (trackingPixel), unwraps players and frames
// (unwrapTags) and, with embedLinks, puts a link to each player's source in
// its place: one per <object> (whose <embed> and <param> name the same
// file) and one per distinct source in the fragment. Tokens it does not
// change are copied byte for byte, so the sanitizer sees exactly what the
// feed sent. It returns the new fragment and how many pixels it removed.
func resolveURLs(fragment string, base *url.URL, embedLinks bool) (string, int) {
	z := nethtml.NewTokenizer(strings.NewReader(fragment))
	r := urlRewriter{base: base, embedLinks: embedLinks, linked: map[string]bool{}}
	r.b.Grow(len(fragment) + len(fragment)/8)
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return r.b.String(), r.pixels
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			raw := z.Raw()
			r.startTag(tt, raw, z.Token())
		case nethtml.EndTagToken:
			raw := z.Raw()
			name, _ := z.TagName()
			r.endTag(raw, string(name))
		default:
			r.b.Write(z.Raw())
		}
	}
}

// urlRewriter is the state of one resolveURLs pass: the output so far, the
// players it is inside and the sources already linked, which decide whether
// a player's source gets its link.
type urlRewriter struct {
	base       *url.URL
	embedLinks bool
	b          strings.Builder
	media      int  // depth inside <video>/<audio>, whose <source> children are players too
	object     int  // depth inside <object>
	objectLink bool // the outermost <object> has its link
	linked     map[string]bool
	pixels     int
}

// startTag writes a start (or self-closing) tag: dropped if it is a
// tracking pixel, preceded by its player's link, left out if unwrapTags
// unwraps it, re-serialized only when a URL in it changed, else raw.
func (r *urlRewriter) startTag(tt nethtml.TokenType, raw []byte, tok nethtml.Token) {
	if tok.Data == "img" && trackingPixel(tok) {
		r.pixels++
		return
	}
	changed := resolveAttrURLs(r.base, tok.Attr)
	if tt == nethtml.StartTagToken && tok.Data == "object" {
		if r.object == 0 {
			r.objectLink = false
		}
		r.object++
	}
	r.linkEmbed(tok)
	if tt == nethtml.StartTagToken && (tok.Data == "video" || tok.Data == "audio") {
		r.media++
	}
	if unwrapTags[tok.Data] {
		return
	}
	if changed {
		r.b.WriteString(tok.String())
	} else {
		r.b.Write(raw)
	}
}

// resolveAttrURLs makes the URL attributes in attrs (urlAttrs and srcset)
// absolute against base, in place. It reports whether any changed, so an
// unchanged tag can be copied byte for byte; nothing changes without base.
func resolveAttrURLs(base *url.URL, attrs []nethtml.Attribute) bool {
	if base == nil {
		return false
	}
	changed := false
	for i := range attrs {
		a := &attrs[i]
		if a.Namespace != "" {
			continue
		}
		switch {
		case urlAttrs[a.Key]:
			if v, ok := resolveRef(base, a.Val); ok {
				a.Val, changed = v, true
			}
		case a.Key == "srcset":
			if v, ok := resolveSrcset(base, a.Val); ok {
				a.Val, changed = v, true
			}
		}
	}
	return changed
}

// linkEmbed writes a paragraph linking to tok's player source, with
// embedLinks, so the reader can still follow it once the player is gone:
// once per source, and once per outermost <object>, whose <embed> and
// <param> name the same file.
func (r *urlRewriter) linkEmbed(tok nethtml.Token) {
	label, src := embedLink(tok, r.media > 0)
	if !r.embedLinks || src == "" || r.linked[src] || (r.object > 0 && r.objectLink) {
		return
	}
	r.linked[src] = true
	r.objectLink = r.object > 0
	r.b.WriteString(`<p><a href="`)
	r.b.WriteString(html.EscapeString(src))
	r.b.WriteString(`">`)
	r.b.WriteString(html.EscapeString(label + ": " + src))
	r.b.WriteString(`</a></p>`)
}

// endTag writes an end tag raw, unless unwrapTags unwraps it, after
// leaving the <video>, <audio> or <object> it closes so later sources are
// judged at the right depth.
func (r *urlRewriter) endTag(raw []byte, name string) {
	if r.media > 0 && (name == "video" || name == "audio") {
		r.media--
	}
	if r.object > 0 && name == "object" {
		r.object--
	}
	if unwrapTags[name] {
		return
	}
	r.b.Write(raw)
}

// unwrapTags are players and frames whose tags resolveURLs removes, keeping
// what is inside them: that is their fallback content, meant for readers
// that cannot show the player (as a mailbox cannot), and the sanitizer would
// otherwise throw it away with the element. The content still goes through
// the sanitizer.
var unwrapTags = map[string]bool{
	"iframe": true, "frame": true, "frameset": true, "object": true, "applet": true, "embed": true, "param": true,
}

// resolveRef resolves a relative reference against base. It reports false
// when v is already absolute, empty, or not a URL, leaving it to the
// sanitizer.
func resolveRef(base *url.URL, v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", false
	}
	ref, err := url.Parse(v)
	if err != nil {
		return "", false
	}
	if ref.IsAbs() {
		// "http:0", "https:foo": an http(s) URL without a host leads nowhere;
		// emptied here, the sanitizer drops it.
		if (ref.Scheme == "http" || ref.Scheme == "https") && ref.Host == "" {
			return "", true
		}
		return "", false
	}
	return base.ResolveReference(ref).String(), true
}

// resolveSrcset resolves every candidate URL of a srcset attribute
// ("a.jpg 1x, b.jpg 2x"), keeping the descriptors.
func resolveSrcset(base *url.URL, v string) (string, bool) {
	var parts []string
	changed := false
	s := v
	for {
		s = strings.TrimLeft(s, " \t\n\r\f,")
		if s == "" {
			break
		}
		end := strings.IndexAny(s, " \t\n\r\f")
		if end < 0 {
			end = len(s)
		}
		u := s[:end]
		s = s[end:]
		desc := ""
		if strings.HasSuffix(u, ",") {
			u = strings.TrimRight(u, ",")
		} else {
			// The descriptor runs to the next comma outside parentheses.
			depth, i := 0, 0
			for ; i < len(s); i++ {
				if s[i] == '(' {
					depth++
				} else if s[i] == ')' && depth > 0 {
					depth--
				} else if s[i] == ',' && depth == 0 {
					break
				}
			}
			desc = strings.TrimSpace(s[:i])
			s = s[i:]
		}
		if r, ok := resolveRef(base, u); ok {
			u, changed = r, true
		}
		if desc != "" {
			u += " " + desc
		}
		parts = append(parts, u)
	}
	if !changed {
		return "", false
	}
	return strings.Join(parts, ", "), true
}

// embedLink names the source of an embedded player so the reader can still
// follow it once the sanitizer removed the player itself.
func embedLink(tok nethtml.Token, inMedia bool) (label, src string) {
	attr := ""
	switch tok.Data {
	case "iframe", "embed", "frame":
		label, attr = "Embedded content", "src"
	case "object":
		label, attr = "Embedded content", "data"
	case "video":
		label, attr = "Video", "src"
	case "audio":
		label, attr = "Audio", "src"
	case "source":
		if !inMedia {
			return "", ""
		}
		label, attr = "Media", "src"
	default:
		return "", ""
	}
	for _, a := range tok.Attr {
		if a.Namespace == "" && a.Key == attr {
			u, err := url.Parse(strings.TrimSpace(a.Val))
			if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				return label, u.String()
			}
		}
	}
	return "", ""
}
