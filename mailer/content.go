package mailer

import (
	"html"
	"net/url"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	nethtml "golang.org/x/net/html"
)

// Content is feed HTML made fit for an email: HTML is sanitized and styled,
// Text is the plain-text rendering of that same sanitized HTML.
type Content struct {
	HTML string
	Text string
}

// PrepareHTML turns a fragment of feed HTML into email content. Relative URLs
// are resolved against base (normally the item's link; an empty or relative
// base leaves them relative, and the sanitizer then drops them), the result is
// sanitized, presentational inline styles are added, and the text rendering
// is derived from the sanitized HTML. See the package documentation for the
// policy. It is safe for concurrent use.
func PrepareHTML(fragment, base string) Content {
	var b *url.URL
	if base != "" {
		if u, err := url.Parse(strings.TrimSpace(base)); err == nil && u.IsAbs() && (u.Scheme == "http" || u.Scheme == "https") {
			b = u
		}
	}
	resolved := resolveURLs(fragment, b, true)
	clean := contentPolicy().Sanitize(resolved)
	return styleAndText(clean)
}

// contentPolicy is built once; a bluemonday.Policy is safe for concurrent use
// once configured and never changes afterwards.
var contentPolicy = sync.OnceValue(newContentPolicy)

func newContentPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	// Everything was resolved against the item link already; whatever is still
	// relative cannot work from a mailbox.
	p.AllowRelativeURLs(false)
	p.RequireParseableURLs(true)
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoFollowOnLinks(false)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	// The only feed-provided style that survives: alignment of text blocks.
	// Elements that get a style of ours (styleAndText) are not listed, so an
	// element never carries two style attributes.
	p.AllowStyles("text-align").MatchingEnum("left", "right", "center", "justify", "start", "end").
		OnElements("p", "div", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "caption")
	return p
}

// monoFont is the font stack for code.
const monoFont = "SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace"

// elementStyles are the inline styles added to sanitized content so it reads
// well in a 640px column and on a phone. The sanitizer allows no feed style
// on these elements, so each ends up with exactly one style attribute.
var elementStyles = map[string]string{
	"a":          "color:#0969da;",
	"img":        "max-width:100%;height:auto;border:0;",
	"pre":        "white-space:pre-wrap;overflow-wrap:break-word;word-wrap:break-word;max-width:100%;overflow:auto;margin:16px 0;padding:12px;border-radius:6px;background-color:#f6f8fa;font-family:" + monoFont + ";font-size:14px;line-height:1.45;",
	"code":       "font-family:" + monoFont + ";font-size:0.9em;",
	"blockquote": "margin:16px 0;padding:0 0 0 14px;border-left:3px solid #d1d9e0;color:#59636e;",
	"table":      "max-width:100%;border-collapse:collapse;",
	"figure":     "margin:16px 0;",
	"figcaption": "font-size:14px;line-height:1.4;color:#59636e;",
	"hr":         "border:0;border-top:1px solid #d1d9e0;margin:24px 0;",
}

// styleAndText walks sanitized HTML once: it copies it with the inline styles
// of elementStyles inserted, and renders the plain-text version.
func styleAndText(clean string) Content {
	z := nethtml.NewTokenizer(strings.NewReader(clean))
	var hb strings.Builder
	hb.Grow(len(clean) + len(clean)/4)
	tc := newTextConv()
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return Content{HTML: hb.String(), Text: tc.String()}
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			raw := z.Raw()
			tok := z.Token()
			if tok.Data == "img" && attr(tok, "src") == "" {
				// Its source was not a usable URL: show what a mail
				// client shows for an image it cannot load, the alt text.
				hb.WriteString(html.EscapeString(attr(tok, "alt")))
				tc.start(tok, true)
				continue
			}
			if st, ok := elementStyles[tok.Data]; ok && len(raw) > len(tok.Data)+1 {
				n := 1 + len(tok.Data) // "<" + name, as bluemonday writes it
				hb.Write(raw[:n])
				hb.WriteString(` style="`)
				hb.WriteString(st)
				hb.WriteString(`"`)
				hb.Write(raw[n:])
			} else {
				hb.Write(raw)
			}
			tc.start(tok, tt == nethtml.SelfClosingTagToken)
		case nethtml.EndTagToken:
			hb.Write(z.Raw())
			name, _ := z.TagName()
			tc.end(string(name))
		case nethtml.TextToken:
			hb.Write(z.Raw())
			tc.text(string(z.Text()))
		default:
			hb.Write(z.Raw())
		}
	}
}
