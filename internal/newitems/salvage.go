package newitems

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// WarningKind says which kind of trouble a Warning reports.
type WarningKind int

const (
	// WarnTruncated: the document stops before its closing tags; the items
	// complete before the cut were kept, the one cut short (if any) was not.
	WarnTruncated WarningKind = iota + 1
	// WarnItemsUnseen: the document holds item markup (<item>, <entry>,
	// JSON Feed "items" entries) but the parser found no item in it.
	WarnItemsUnseen
)

// Warning is what went wrong in a document that still gave a Feed: a poll
// that is a success, but one a publisher should hear about.
type Warning struct {
	Kind WarningKind
	// Text is one sentence for the publisher: what is wrong and where.
	Text string
	// ItemMarkup is how many item start tags (or JSON Feed items) the
	// document holds; for WarnTruncated, the complete ones before the cut.
	ItemMarkup int
	// CutShort is how many items were dropped because the document ends
	// inside them (0 or 1); WarnTruncated only.
	CutShort int
	// Line is the line the trouble is at (the line the document stops on,
	// or where the element that swallows the items opens); 0 if unknown.
	Line int
}

// itemLevelParents are the local names an element may have above an item
// that the feed parsers read as one: RSS 2.0 <rss><channel>, RSS 1.0
// <rdf:RDF> (and <channel> for the rare RSS 1.0 that nests items), Atom <feed>.
var itemLevelParents = map[string]bool{"rss": true, "channel": true, "RDF": true, "feed": true}

// isItemName reports whether a local element name is an item's.
func isItemName(local string) bool { return local == "item" || local == "entry" }

// openElement is an element whose end tag the scan has not reached yet.
type openElement struct {
	local string // local name
	raw   string // the name as written, with its prefix: what its end tag needs
	line  int    // line of its start tag
}

// atItemLevel reports whether an item whose ancestors are stack sits where
// the feed parsers look for items: one or two levels down, under the
// root/channel elements only.
func atItemLevel(stack []openElement) bool {
	if len(stack) == 0 || len(stack) > 2 {
		return false
	}
	for _, e := range stack {
		if !itemLevelParents[e.local] {
			return false
		}
	}
	return true
}

// newScanDecoder returns an XML decoder set up like the feed parser's
// (non-strict, HTML entities known), so the scans below see the element
// tree the parser sees.
func newScanDecoder(doc []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	// doc is UTF-8 (Decode rewrote the declaration); any other label is
	// read as is rather than failing the scan.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return d
}

// rawName returns the element name of the start tag at the beginning of
// tag ("<rdf:RDF xmlns…>" → "rdf:RDF").
func rawName(tag []byte) string {
	tag = bytes.TrimPrefix(tag, []byte("<"))
	end := bytes.IndexAny(tag, " \t\r\n/>")
	if end < 0 {
		end = len(tag)
	}
	return string(tag[:end])
}

// truncation is what scanTruncation learned of a document cut short.
type truncation struct {
	cut       int           // offset just after the last complete item's end tag
	open      []openElement // the elements open at the cut, outermost first
	complete  int           // items at item level ended before the cut
	cutShort  int           // an item was open when the document stopped (0 or 1)
	line      int           // the line the document stops on
	truncated bool          // the document stops inside an element (unexpected EOF)
}

// isEOFError reports whether a tokenizer error means the input stopped
// inside markup: Go's XML decoder reports a document that ends with open
// elements, or inside a tag, comment or CDATA section, as a syntax error
// whose message starts with "unexpected EOF".
func isEOFError(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var se *xml.SyntaxError
	return errors.As(err, &se) && strings.HasPrefix(se.Msg, "unexpected EOF")
}

// scanTruncation tokenizes an XML document the way the feed parser does and
// finds, when the document stops before its end (truncated transfer,
// generator crash), the offset just after the last item end tag read at
// item level, and the elements still open there. Item end tags inside
// CDATA sections, comments or escaped content are text to the tokenizer,
// so they are never taken for one. It is pure.
func scanTruncation(doc []byte) truncation {
	var tr truncation
	d := newScanDecoder(doc)
	var stack []openElement
	prev := int64(0)
	itemOpen := false
	for {
		tok, err := d.Token()
		if err != nil {
			tr.truncated = err != io.EOF && isEOFError(err)
			tr.line, _ = d.InputPos()
			if tr.truncated && itemOpen {
				tr.cutShort = 1
			}
			return tr
		}
		off := d.InputOffset()
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := d.InputPos()
			raw := rawName(doc[prev:off])
			if raw == "" || strings.ContainsAny(raw, "<") {
				raw = t.Name.Local
			}
			if isItemName(t.Name.Local) && atItemLevel(stack) {
				itemOpen = true
			}
			stack = append(stack, openElement{local: t.Name.Local, raw: raw, line: line})
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if isItemName(t.Name.Local) && atItemLevel(stack) {
				itemOpen = false
				tr.complete++
				tr.cut = int(off)
				tr.open = append(tr.open[:0], stack...)
			}
		}
		prev = off
	}
}

// salvageTruncated returns doc cut just after its last complete item and
// closed with the end tags of the elements open there, and what was cut,
// when doc is an XML document that stops before its end and holds at least
// one complete item. ok is false otherwise. It is pure.
func salvageTruncated(doc []byte) (fixed []byte, tr truncation, ok bool) {
	tr = scanTruncation(doc)
	if !tr.truncated || tr.complete == 0 || len(tr.open) == 0 {
		return nil, tr, false
	}
	var b bytes.Buffer
	b.Grow(tr.cut + 32)
	b.Write(doc[:tr.cut])
	for i := len(tr.open) - 1; i >= 0; i-- {
		b.WriteString("</")
		b.WriteString(tr.open[i].raw)
		b.WriteString(">")
	}
	return b.Bytes(), tr, true
}

// truncatedWarning words what salvageTruncated did, given how many items
// the parser kept from the salvaged document.
func truncatedWarning(tr truncation, kept int) *Warning {
	var b strings.Builder
	b.WriteString("the feed ends")
	if tr.line > 0 {
		b.WriteString(" on line " + strconv.Itoa(tr.line))
	}
	b.WriteString(" after " + plural(tr.complete, "complete item", "complete items") +
		" without its closing tags (truncated?): " + plural(kept, "item", "items") + " kept")
	if tr.cutShort > 0 {
		b.WriteString(", the one cut short ignored")
	}
	return &Warning{Kind: WarnTruncated, Text: b.String(), ItemMarkup: tr.complete, CutShort: tr.cutShort, Line: tr.line}
}

// itemMarkup is what scanItemMarkup found.
type itemMarkup struct {
	count int    // item/entry start tags anywhere in the document
	name  string // the first one's name as written ("item", "atom:entry")
	line  int    // the first one's line
	space string // the first one's namespace URL
	// swallower is the outermost element above the first item that is not
	// one the parsers look for items in; nil when the item sits where it
	// should.
	swallower *openElement
	rootLocal string // the root element's local name
	local     string // the first item's local name
}

// scanItemMarkup counts the item and entry start tags of an XML document
// (markup only: CDATA, comments and escaped text do not count) and
// describes where the first one sits. It reads on past a tokenizer error
// no further. It is pure.
func scanItemMarkup(doc []byte) itemMarkup {
	var m itemMarkup
	d := newScanDecoder(doc)
	var stack []openElement
	prev := int64(0)
	for {
		tok, err := d.Token()
		if err != nil {
			return m
		}
		off := d.InputOffset()
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := d.InputPos()
			raw := rawName(doc[prev:off])
			el := openElement{local: t.Name.Local, raw: raw, line: line}
			if len(stack) == 0 {
				m.rootLocal = t.Name.Local
			}
			if isItemName(t.Name.Local) {
				if m.count == 0 {
					m.name, m.local, m.line, m.space = raw, t.Name.Local, line, t.Name.Space
					for i, e := range stack {
						if !itemLevelParents[e.local] || i > 1 {
							sw := stack[i]
							m.swallower = &sw
							break
						}
					}
				}
				m.count++
			}
			stack = append(stack, el)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		prev = off
	}
}

// unseenItemsWarning returns the warning for a document that parsed to no
// items although it holds m's item markup, or nil when it holds none.
func unseenItemsWarning(m itemMarkup) *Warning {
	if m.count == 0 {
		return nil
	}
	w := &Warning{Kind: WarnItemsUnseen, ItemMarkup: m.count, Line: m.line}
	head := "the document has " + plural(m.count, "<"+m.name+"> element", "<"+m.name+"> elements") + " but the parser found none"
	switch {
	case m.swallower != nil:
		w.Line = m.swallower.line
		w.Text = head + ": the <" + m.swallower.raw + "> element opened on line " + strconv.Itoa(m.swallower.line) +
			" is not closed before the first <" + m.name + "> (line " + strconv.Itoa(m.line) + "), so it swallows " + them(m.count)
	case m.rootLocal == "feed" && m.local == "item":
		w.Text = head + ": the items of an Atom <feed> are <entry> elements, not <item>"
	case (m.rootLocal == "rss" || m.rootLocal == "RDF") && m.local == "entry":
		w.Text = head + ": the items of an RSS feed are <item> elements, not <entry>"
	case m.space != "" && !knownItemSpaces[m.space]:
		w.Text = head + ": " + they(m.count) + " in the namespace " + strconv.Quote(m.space) + ", which is not RSS's or Atom's"
	default:
		w.Text = head + " (first at line " + strconv.Itoa(m.line) + ")"
	}
	return w
}

// knownItemSpaces are the namespaces item elements of RSS 0.9, 1.0 and 2.0
// and Atom 0.3 and 1.0 are in.
var knownItemSpaces = map[string]bool{
	"http://www.w3.org/2005/Atom": true, "http://purl.org/atom/ns#": true,
	"http://purl.org/rss/1.0/": true, "http://my.netscape.com/rdf/simple/0.9/": true,
	"http://backend.userland.com/rss2": true, "http://blogs.law.harvard.edu/tech/rss": true,
}

// plural returns n and the word for it: "1 item", "3 items".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// them and they are the pronouns for n things.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func they(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}
