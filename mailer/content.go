package mailer

import (
	"html"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode"

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

// urlAttrs are the attributes holding a single URL that resolveURLs makes
// absolute. srcset (a list) is handled separately.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "cite": true, "poster": true, "background": true,
	"action": true, "formaction": true, "data": true, "longdesc": true, "lowsrc": true,
}

// resolveURLs rewrites relative URLs in start tags to absolute ones against
// base, unwraps players and frames (unwrapTags) and, with embedLinks, puts a
// link to each player's source in its place. Tokens it does not change are copied byte for byte, so the
// sanitizer sees exactly what the feed sent.
func resolveURLs(fragment string, base *url.URL, embedLinks bool) string {
	z := nethtml.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	b.Grow(len(fragment) + len(fragment)/8)
	media := 0 // depth inside <video>/<audio>, whose <source> children are players too
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return b.String()
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			raw := z.Raw()
			tok := z.Token()
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
			if label, src := embedLink(tok, media > 0); embedLinks && src != "" {
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

// HTMLToText renders HTML as plain text the way the text part of an email is
// made (see the package documentation). It does not sanitize: give it
// sanitized HTML, or use PrepareHTML.
func HTMLToText(s string) string {
	z := nethtml.NewTokenizer(strings.NewReader(s))
	tc := newTextConv()
	for {
		switch tt := z.Next(); tt {
		case nethtml.ErrorToken:
			return tc.String()
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			tc.start(z.Token(), tt == nethtml.SelfClosingTagToken)
		case nethtml.EndTagToken:
			name, _ := z.TagName()
			tc.end(string(name))
		case nethtml.TextToken:
			tc.text(string(z.Text()))
		}
	}
}

// textConv renders a stream of HTML tokens as plain text.
type textConv struct {
	out       strings.Builder
	pending   int  // line breaks owed before the next text (2 = blank line)
	pendingQ  int  // lowest blockquote depth seen while breaks were owed
	space     bool // a collapsed space is owed before the next text
	lineStart bool // nothing written on the current line yet
	quote     int  // blockquote depth
	pre       int  // pre depth: whitespace kept
	skip      int  // inside elements whose text is not content
	lists     []textList
	marker    string // list marker owed at the start of the next text
	links     []textLink
	cells     int // cells written in the current table row
}

type textList struct {
	ordered bool
	n       int
}

type textLink struct {
	href  string
	start int
}

func newTextConv() *textConv { return &textConv{lineStart: true} }

// blockTags start and end a paragraph-like block (blank line around);
// lineTags only start a new line.
var (
	blockTags = map[string]bool{
		"p": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
		"ul": true, "ol": true, "dl": true, "table": true, "figure": true, "blockquote": true,
		"pre": true, "hr": true, "details": true, "address": true, "hgroup": true,
	}
	lineTags = map[string]bool{
		"div": true, "section": true, "article": true, "aside": true, "header": true, "footer": true,
		"tr": true, "caption": true, "figcaption": true, "summary": true, "dt": true, "dd": true,
		"li": true, "tbody": true, "thead": true, "tfoot": true, "main": true, "nav": true,
	}
	skipTags = map[string]bool{
		"script": true, "style": true, "head": true, "title": true, "template": true,
		"noscript": true, "iframe": true, "object": true, "svg": true, "math": true,
	}
)

func (c *textConv) breakLines(n int) {
	if c.out.Len() == 0 && c.marker == "" {
		return
	}
	if c.pending == 0 || c.quote < c.pendingQ {
		c.pendingQ = c.quote
	}
	if n > c.pending {
		c.pending = n
	}
	c.space = false
}

func (c *textConv) prefix() string {
	return strings.Repeat("> ", c.quote)
}

// begin writes owed line breaks, the line prefix and any list marker before
// text on the current line.
func (c *textConv) begin() {
	if c.pending > 0 && c.out.Len() > 0 {
		// Empty lines between blocks carry the quote marks of the
		// shallower of the two blocks they separate.
		q := strings.TrimRight(strings.Repeat("> ", min(c.pendingQ, c.quote)), " ")
		for i := 0; i < c.pending; i++ {
			c.out.WriteByte('\n')
			if i < c.pending-1 && q != "" {
				c.out.WriteString(q)
			}
		}
		c.lineStart = true
	}
	c.pending = 0
	if c.lineStart {
		c.out.WriteString(c.prefix())
		if len(c.lists) > 1 {
			c.out.WriteString(strings.Repeat("  ", len(c.lists)-1))
		}
		c.out.WriteString(c.marker)
		c.marker = ""
		c.lineStart = false
		c.space = false
	}
}

func (c *textConv) text(s string) {
	if c.skip > 0 || s == "" {
		return
	}
	if c.pre > 0 {
		for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
			if i > 0 {
				c.begin()
				c.out.WriteByte('\n')
				c.lineStart = true
			}
			if line != "" {
				c.begin()
				c.out.WriteString(line)
			}
		}
		return
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !c.lineStart || c.pending > 0 {
				c.space = true
			}
			continue
		}
		if c.pending > 0 || c.lineStart {
			c.begin()
		} else if c.space {
			c.out.WriteByte(' ')
		}
		c.space = false
		c.out.WriteRune(r)
	}
}

// raw writes s as is on the current line (after any owed breaks).
func (c *textConv) raw(s string) {
	c.begin()
	if c.space {
		c.out.WriteByte(' ')
		c.space = false
	}
	c.out.WriteString(s)
}

func attr(tok nethtml.Token, key string) string {
	for _, a := range tok.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func (c *textConv) start(tok nethtml.Token, selfClosing bool) {
	name := tok.Data
	if skipTags[name] {
		if !selfClosing {
			c.skip++
		}
		return
	}
	if c.skip > 0 {
		return
	}
	switch {
	case (name == "ul" || name == "ol") && len(c.lists) > 0:
		c.breakLines(1) // a nested list continues its item
	case blockTags[name]:
		c.breakLines(2)
	case lineTags[name]:
		c.breakLines(1)
	}
	switch name {
	case "br":
		if c.out.Len() > 0 {
			if c.pending == 0 || c.quote < c.pendingQ {
				c.pendingQ = c.quote
			}
			if c.pending < 2 {
				c.pending++
			}
			c.space = false
		}
	case "hr":
		c.raw("----")
		c.breakLines(2)
	case "blockquote":
		c.quote++
	case "pre":
		c.pre++
	case "ul", "ol":
		c.lists = append(c.lists, textList{ordered: name == "ol"})
	case "li":
		if n := len(c.lists); n > 0 {
			l := &c.lists[n-1]
			l.n++
			if l.ordered {
				c.marker = strconv.Itoa(l.n) + ". "
			} else {
				c.marker = "- "
			}
		} else {
			c.marker = "- "
		}
	case "tr":
		c.cells = 0
	case "td", "th":
		if c.cells > 0 {
			c.raw(" | ")
		}
		c.cells++
	case "img":
		if alt := strings.Join(strings.Fields(attr(tok, "alt")), " "); alt != "" {
			c.raw("[" + alt + "]")
		}
	case "a":
		href := strings.TrimSpace(attr(tok, "href"))
		if selfClosing {
			if href != "" {
				c.raw(href)
			}
			return
		}
		c.links = append(c.links, textLink{href: href, start: c.out.Len()})
	}
}

func (c *textConv) end(name string) {
	if skipTags[name] {
		if c.skip > 0 {
			c.skip--
		}
		return
	}
	if c.skip > 0 {
		return
	}
	switch name {
	case "blockquote":
		if c.quote > 0 {
			c.breakLines(2)
			c.quote--
		}
	case "pre":
		if c.pre > 0 {
			c.pre--
		}
	case "ul", "ol":
		if n := len(c.lists); n > 0 {
			c.lists = c.lists[:n-1]
		}
		c.marker = ""
	case "a":
		if n := len(c.links); n > 0 {
			l := c.links[n-1]
			c.links = c.links[:n-1]
			c.finishLink(l)
		}
	}
	switch {
	case (name == "ul" || name == "ol") && len(c.lists) > 0:
		c.breakLines(1)
	case blockTags[name]:
		c.breakLines(2)
	case lineTags[name]:
		c.breakLines(1)
	}
}

// finishLink appends " <url>" after a link's text, or the URL alone when the
// link had no text; nothing when the text already is the URL.
func (c *textConv) finishLink(l textLink) {
	if l.href == "" {
		return
	}
	text := ""
	if l.start <= c.out.Len() {
		text = strings.TrimSpace(c.out.String()[l.start:])
	}
	switch {
	case text == "":
		c.raw(l.href)
	case sameURL(text, l.href), strings.Contains(normURL(text), normURL(l.href)):
	default:
		sp := c.space
		c.space = false
		c.begin()
		if sp {
			defer func() { c.space = true }()
		}
		c.out.WriteString(" <" + l.href + ">")
	}
}

// sameURL reports whether a link's text just spells out its target.
func sameURL(text, href string) bool {
	return normURL(text) == normURL(href)
}

// normURL lower-cases a URL and strips what people leave out when they
// spell one: the scheme, "www." and a trailing slash.
func normURL(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"mailto:", "https://", "http://", "www."} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimRight(s, "/")
}

// String returns the text, trimmed, without trailing blanks on lines and
// with at most one empty (or only quote-marked) line in a row.
func (c *textConv) String() string {
	lines := strings.Split(c.out.String(), "\n")
	out := lines[:0]
	empty := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.Trim(l, "> ") == "" {
			empty++
			if empty > 1 {
				continue
			}
		} else {
			empty = 0
		}
		out = append(out, l)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}
