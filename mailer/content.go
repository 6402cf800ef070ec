package mailer

import (
	"html"
	"net/url"
	"strings"
	"sync"
	"unicode"

	"github.com/microcosm-cc/bluemonday"
	nethtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Content is feed HTML made fit for an email: HTML is sanitized, well
// formed and styled, Text is the plain-text rendering of that same HTML.
// Pixels counts the tracking pixels removed.
type Content struct {
	HTML   string
	Text   string
	Pixels int
}

// Empty reports whether the content shows nothing: no image, and no
// letter or digit in its text (a lone rule or stray punctuation is not
// something to read).
func (c Content) Empty() bool {
	return !strings.Contains(c.HTML, "<img") &&
		!strings.ContainsFunc(c.Text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
}

// PrepareHTML turns a fragment of feed HTML into email content. Relative URLs
// are resolved against base (normally the item's link; an empty or relative
// base leaves them relative, and the sanitizer then drops them), tracking
// pixels are removed, the result is sanitized, parsed and written out again
// well formed (tidyHTML) with presentational inline styles, and the text
// rendering is derived from that HTML. See the package documentation for
// the policy. It is safe for concurrent use.
func PrepareHTML(fragment, base string) Content {
	var b *url.URL
	if base != "" {
		if u, err := url.Parse(strings.TrimSpace(base)); err == nil && u.IsAbs() && (u.Scheme == "http" || u.Scheme == "https") {
			b = u
		}
	}
	resolved, pixels := resolveURLs(fragment, b, true)
	out := tidyHTML(contentPolicy().Sanitize(resolved))
	return Content{HTML: out, Text: HTMLToText(out), Pixels: pixels}
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

// tidyHTML parses sanitized HTML as the content of a <div> (as the
// templates place it) and writes the tree out again, so what is sent is well
// formed whatever the feed wrote: every element closed and properly nested,
// no end tag on a void element, no block inside a <p>. On the way it adds
// the inline styles of elementStyles, replaces an image without a source by
// its alt text (what a mail client shows for an image it cannot load) and
// drops links that show nothing (no text, no image: a share button whose
// image was a tracker, say). Rendering a parsed tree can yield markup that
// parses to another tree (the parser orders a link's attributes, and moves
// some misnested table and formatting elements), so it parses and renders
// again until the output no longer changes: what is sent parses as itself.
func tidyHTML(clean string) string {
	out := renderFragment(clean, true)
	for range 3 {
		next := renderFragment(out, false)
		if next == out {
			break
		}
		out = next
	}
	return out
}

// fragmentContext is the element content is parsed in: the templates put
// it in a <div>.
var fragmentContext = &nethtml.Node{Type: nethtml.ElementNode, Data: "div", DataAtom: atom.Div}

// renderFragment parses s in fragmentContext and renders it, with fix
// applied to every node when fix is set.
func renderFragment(s string, fix bool) string {
	nodes, err := nethtml.ParseFragment(strings.NewReader(s), fragmentContext)
	if err != nil { // only a reader error, which a strings.Reader never gives
		return html.EscapeString(s)
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, n := range nodes {
		if fix {
			n = fixNode(n)
		}
		if n == nil {
			continue
		}
		if err := nethtml.Render(&b, n); err != nil {
			return html.EscapeString(s)
		}
	}
	return b.String()
}

// fixNode applies tidyHTML's changes to n and its descendants. It returns
// the node to keep in n's place, or nil to drop it.
func fixNode(n *nethtml.Node) *nethtml.Node {
	if n.Type != nethtml.ElementNode {
		return n
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if r := fixNode(c); r != c {
			if r != nil {
				n.InsertBefore(r, c)
			}
			n.RemoveChild(c)
		}
		c = next
	}
	switch n.Data {
	case "img":
		if attrOf(n, "src") == "" {
			return &nethtml.Node{Type: nethtml.TextNode, Data: attrOf(n, "alt")}
		}
	case "a":
		if !showsSomething(n) {
			// Keep its white space, so the words around stay apart.
			if strings.TrimSpace(textOf(n)) == "" && textOf(n) != "" {
				return &nethtml.Node{Type: nethtml.TextNode, Data: " "}
			}
			return nil
		}
	}
	if st, ok := elementStyles[n.Data]; ok {
		attrs := make([]nethtml.Attribute, 0, len(n.Attr)+1)
		attrs = append(attrs, nethtml.Attribute{Key: "style", Val: st})
		for _, a := range n.Attr {
			if a.Key != "style" || a.Namespace != "" {
				attrs = append(attrs, a)
			}
		}
		n.Attr = attrs
	}
	return n
}

// showsSomething reports whether n has text other than white space or an
// image among its descendants.
func showsSomething(n *nethtml.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == nethtml.TextNode && strings.TrimSpace(c.Data) != "":
			return true
		case c.Type == nethtml.ElementNode && (c.Data == "img" || c.Data == "hr" || showsSomething(c)):
			return true
		}
	}
	return false
}

// textOf is the text of n's descendants.
func textOf(n *nethtml.Node) string {
	var b strings.Builder
	var walk func(*nethtml.Node)
	walk = func(n *nethtml.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == nethtml.TextNode {
				b.WriteString(c.Data)
			}
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// attrOf is the value of n's attribute key (no namespace), or "".
func attrOf(n *nethtml.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}
