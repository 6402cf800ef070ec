package mailer

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	nethtml "golang.org/x/net/html"
)

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
	apart     bool // the last thing written was a URL or an image: a word right after it gets a space
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
	img   bool // the link holds an image
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
		} else if c.space || (c.apart && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			c.out.WriteByte(' ')
		}
		c.space, c.apart = false, false
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
	c.apart = false
	c.out.WriteString(s)
}

// token writes s (a URL, an image's [alt]) kept apart from the words on
// either side: a space before it when it would touch a word, and a space
// after it when a word follows at once.
func (c *textConv) token(s string) {
	c.begin()
	if !c.space && !c.lineStart {
		if r, _ := utf8.DecodeLastRuneInString(c.out.String()); unicode.IsLetter(r) || unicode.IsDigit(r) {
			c.space = true
		}
	}
	c.raw(s)
	c.apart = true
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
		c.lineBreak()
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
		c.listItem()
	case "tr":
		c.cells = 0
	case "td", "th":
		if c.cells > 0 {
			c.raw(" | ")
		}
		c.cells++
	case "img":
		c.image(tok)
	case "a":
		href := strings.TrimSpace(attr(tok, "href"))
		if selfClosing {
			if href != "" {
				c.token(href)
			}
			return
		}
		c.links = append(c.links, textLink{href: href, start: c.out.Len()})
	}
}

// lineBreak is a <br>: one more pending line break (at most two), at the
// shallowest quote depth it was asked at; nothing at the very start.
func (c *textConv) lineBreak() {
	if c.out.Len() > 0 {
		if c.pending == 0 || c.quote < c.pendingQ {
			c.pendingQ = c.quote
		}
		if c.pending < 2 {
			c.pending++
		}
		c.space = false
	}
}

// listItem is an <li>: the marker of the next item of the innermost list
// ("1. " numbered, "- " otherwise or outside any list).
func (c *textConv) listItem() {
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
}

// image is an <img>: its alt text in brackets, or "[image]" for an
// unlinked one without; the open links are marked as holding an image.
func (c *textConv) image(tok nethtml.Token) {
	for i := range c.links {
		c.links[i].img = true
	}
	switch alt := strings.Join(strings.Fields(attr(tok, "alt")), " "); {
	case alt != "":
		c.token("[" + alt + "]")
	case len(c.links) == 0:
		// Say there is one: a post may be nothing but a picture. A
		// linked image is shown by the link's URL instead.
		c.token("[image]")
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
// link holds only an image without alt text; nothing when the text already
// is the URL, or when the link shows nothing at all (no text, no image), as
// it shows nothing in the HTML part either.
func (c *textConv) finishLink(l textLink) {
	if l.href == "" {
		return
	}
	text := ""
	if l.start <= c.out.Len() {
		text = strings.TrimSpace(c.out.String()[l.start:])
	}
	switch {
	case text == "" && !l.img:
	case text == "":
		c.token(l.href)
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
