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
	var b strings.Builder
	b.Grow(len(fragment) + len(fragment)/8)
	media := 0          // depth inside <video>/<audio>, whose <source> children are players too
	object := 0         // depth inside <object>
	objectLink := false // the outermost <object> has its link
	linked := map[string]bool{}
	pixels := 0
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return b.String(), pixels
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			raw := z.Raw()
			tok := z.Token()
			if tok.Data == "img" && trackingPixel(tok) {
				pixels++
				continue
			}
			changed := false
			if base != nil {
				for i := range tok.Attr {
					a := &tok.Attr[i]
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
			}
			if tt == nethtml.StartTagToken && tok.Data == "object" {
				if object == 0 {
					objectLink = false
				}
				object++
			}
			if label, src := embedLink(tok, media > 0); embedLinks && src != "" && !linked[src] && !(object > 0 && objectLink) {
				linked[src] = true
				objectLink = object > 0
				b.WriteString(`<p><a href="`)
				b.WriteString(html.EscapeString(src))
				b.WriteString(`">`)
				b.WriteString(html.EscapeString(label + ": " + src))
				b.WriteString(`</a></p>`)
			}
			if tt == nethtml.StartTagToken && (tok.Data == "video" || tok.Data == "audio") {
				media++
			}
			if unwrapTags[tok.Data] {
				continue
			}
			if changed {
				b.WriteString(tok.String())
			} else {
				b.Write(raw)
			}
		case nethtml.EndTagToken:
			raw := z.Raw()
			name, _ := z.TagName()
			if media > 0 && (string(name) == "video" || string(name) == "audio") {
				media--
			}
			if object > 0 && string(name) == "object" {
				object--
			}
			if unwrapTags[string(name)] {
				continue
			}
			b.Write(raw)
		default:
			b.Write(z.Raw())
		}
	}
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
