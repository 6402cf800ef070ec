// Package opml reads and writes OPML subscription lists, the format feed
// readers import and export.
//
// Parse is tolerant: it repairs the two malformations real exports are full
// of (a bare & and a < inside attribute values), reads any encoding, accepts
// xmlUrl however it is capitalised, flattens folders and drops repeated
// feeds. Write produces OPML 2.0 that Parse reads back unchanged.
package opml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/feedmail/feedmail/internal/newitems"
)

const (
	// MaxOutlines is the most <outline> elements (feeds and folders
	// together) Parse reads; a longer document is refused with ErrTooLarge.
	MaxOutlines = 10000
	// MaxBytes is the largest document Parse reads (10 MB, the same limit as
	// a fetched feed); a longer one is refused with ErrTooLarge.
	MaxBytes = 10 << 20
	// FolderSeparator joins the names of nested folders in Outline.Folder.
	FolderSeparator = " / "
)

var (
	// ErrNotOPML is wrapped when the document is not OPML: not XML, or its
	// root element is not <opml>.
	ErrNotOPML = errors.New("opml: not an OPML document")
	// ErrNoFeeds is wrapped when an OPML document holds no outline with an
	// xmlUrl.
	ErrNoFeeds = errors.New("opml: no feeds in the document")
	// ErrTooLarge is wrapped when the document exceeds MaxBytes or
	// MaxOutlines.
	ErrTooLarge = errors.New("opml: document too large")
	// ErrMalformed is wrapped when an OPML document is broken beyond what
	// Parse repairs; the XML error is wrapped too.
	ErrMalformed = errors.New("opml: malformed document")
	// ErrInvalidOutline is wrapped by Write for an outline without XMLURL.
	ErrInvalidOutline = errors.New("opml: outline without xmlUrl")
)

// Outline is one feed of a subscription list.
type Outline struct {
	// Title is the outline's text attribute, or its title attribute when
	// text is missing or blank; trimmed, white space folded. May be empty.
	Title string
	// XMLURL is the feed's URL (xmlUrl, any capitalisation), trimmed.
	XMLURL string
	// HTMLURL is the site's URL (htmlUrl, any capitalisation), trimmed.
	HTMLURL string
	// Folder names the folders the outline sits in, outermost first, joined
	// with FolderSeparator ("Tech / Go"); "" at the top level. A folder is an
	// outline without xmlUrl that contains other outlines; its name is read
	// like Title. The category attribute is not used.
	Folder string
}

// Parse reads an OPML document and returns its feeds: every outline with a
// non-empty xmlUrl, in document order, folders flattened into
// Outline.Folder, deduplicated by exact XMLURL (the first occurrence, with
// its title and folder, wins). The type attribute is not consulted (feeds
// come as type="rss", "atom", "pie" or none), except that type="source"
// (Liferea's nested subscription list) is not a feed; outlines without
// xmlUrl (type="link", "include") are not feeds either.
//
// The document may be in any encoding (see newitems.Decode). Before parsing,
// a bare & that does not start a character or entity reference becomes
// &amp;, and a < inside a quoted attribute value (or one in text that cannot
// start markup) becomes &lt; — the malformations of hand-edited and
// badly-generated exports. If the document is still not well-formed, Parse
// tries once more, this time also escaping quotes that cannot close an
// attribute value because what follows them is not another attribute or the
// end of the tag (see Repair). HTML entities (&eacute;) are understood. A
// document cut short (missing end tags) yields the outlines read before the
// cut; junk after the root element is ignored, but outlines of a second
// document concatenated to the first are read.
//
// Errors wrap ErrNotOPML, ErrNoFeeds, ErrTooLarge or ErrMalformed, or the
// reader's error.
func Parse(r io.Reader) ([]Outline, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("opml: reading: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxBytes)
	}
	doc, err := newitems.Decode(data, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotOPML, err)
	}
	out, err := parseDoc(repair(doc, false))
	if errors.Is(err, ErrMalformed) {
		// Second chance: also treat quotes that cannot end an attribute
		// value as part of it (description="Jen "From Head To Toe" blog").
		if out2, err2 := parseDoc(repair(doc, true)); err2 == nil {
			return out2, nil
		}
	}
	return out, err
}

// parseDoc reads the feeds of a repaired UTF-8 OPML document.
func parseDoc(doc []byte) ([]Outline, error) {

	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	// The document is UTF-8 now, whatever its declaration still says.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }

	type frame struct {
		outline bool
		folder  string // this outline's name, if it is a folder candidate
		isFeed  bool
	}
	var (
		stack    []frame
		out      []Outline
		seen     = map[string]bool{}
		rootSeen bool
		count    int
	)
	folderPath := func() string {
		var names []string
		for _, f := range stack {
			if f.outline && !f.isFeed && f.folder != "" {
				names = append(names, f.folder)
			}
		}
		return strings.Join(names, FolderSeparator)
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !rootSeen {
				return nil, fmt.Errorf("%w: %w", ErrNotOPML, err)
			}
			var se *xml.SyntaxError
			if errors.As(err, &se) && (se.Msg == "unexpected EOF" || len(stack) == 0) {
				break // cut short, or junk after the root element: keep what was read
			}
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if !rootSeen {
				if name != "opml" {
					return nil, fmt.Errorf("%w: root element is <%s>", ErrNotOPML, t.Name.Local)
				}
				rootSeen = true
			}
			if name != "outline" {
				stack = append(stack, frame{})
				continue
			}
			count++
			if count > MaxOutlines {
				return nil, fmt.Errorf("%w: more than %d outlines", ErrTooLarge, MaxOutlines)
			}
			var text, title, typ, xmlURL, htmlURL string
			for _, a := range t.Attr {
				switch strings.ToLower(a.Name.Local) {
				case "text":
					text = a.Value
				case "title":
					title = a.Value
				case "type":
					typ = strings.TrimSpace(a.Value)
				case "xmlurl":
					xmlURL = strings.TrimSpace(a.Value)
				case "htmlurl":
					htmlURL = strings.TrimSpace(a.Value)
				}
			}
			label := clean(text)
			if label == "" {
				label = clean(title)
			}
			// Liferea marks a nested subscription list as type="source"; it is
			// not a feed.
			f := frame{outline: true, folder: label, isFeed: xmlURL != "" && !strings.EqualFold(typ, "source")}
			if f.isFeed && !seen[xmlURL] {
				seen[xmlURL] = true
				out = append(out, Outline{Title: label, XMLURL: xmlURL, HTMLURL: htmlURL, Folder: folderPath()})
			}
			stack = append(stack, f)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if !rootSeen {
		return nil, fmt.Errorf("%w: no root element", ErrNotOPML)
	}
	if len(out) == 0 {
		return nil, ErrNoFeeds
	}
	return out, nil
}

// clean trims s and folds runs of white space to one space.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

// Repair escapes the stray & and < characters that make so many real OPML
// files ill-formed XML, leaving well-formed markup alone (doc must be UTF-8):
//
//   - In text and in quoted attribute values, an & that does not begin a
//     reference (&name; &#123; &#x1F;) becomes &amp;.
//   - In a quoted attribute value, every < becomes &lt;.
//   - In text, a < that cannot begin markup (a tag, end tag, comment, CDATA
//     section, declaration or processing instruction) becomes &lt;.
//
// Comments, CDATA sections, processing instructions and declarations are
// copied unchanged. A document that needs no repair is returned as is.
// Repair is exported for tools and tests; Parse calls it.
func Repair(doc []byte) []byte { return repair(doc, false) }

// RepairQuotes does what Repair does and also escapes, inside an attribute
// value, a quote character that cannot end the value: one not followed by
// (optional white space and) another attribute's name and "=", the end of
// the tag ("/>" or ">") followed by white space and "<" or the end of the
// document, or the end of the document. This fixes
// description="by Jen "From Head To Toe" about…" and unescaped HTML such as
// description="at <a href="https://x/">X</a>", but it would misread a
// well-formed element with attributes and text content (<a b="c">text</a>),
// so Parse uses it only on documents Repair could not mend.
func RepairQuotes(doc []byte) []byte { return repair(doc, true) }

func repair(doc []byte, strayQuotes bool) []byte {
	var out []byte // allocated on the first change
	changed := func(i int) {
		if out == nil {
			out = make([]byte, 0, len(doc)+64)
			out = append(out, doc[:i]...)
		}
	}
	emit := func(i int, s string) {
		changed(i)
		out = append(out, s...)
	}
	keep := func(i int) {
		if out != nil {
			out = append(out, doc[i])
		}
	}
	copyUntil := func(i int, end string) int {
		j := bytes.Index(doc[i:], []byte(end))
		if j < 0 {
			j = len(doc) - i
		} else {
			j += len(end)
		}
		if out != nil {
			out = append(out, doc[i:i+j]...)
		}
		return i + j
	}

	const (
		inText = iota
		inTag
		inValue
	)
	state, quote := inText, byte(0)
	for i := 0; i < len(doc); {
		c := doc[i]
		switch state {
		case inText:
			switch c {
			case '&':
				if !isReference(doc[i:]) {
					emit(i, "&amp;")
					i++
					continue
				}
			case '<':
				rest := doc[i+1:]
				switch {
				case bytes.HasPrefix(rest, []byte("!--")):
					i = copyUntil(i, "-->")
					continue
				case bytes.HasPrefix(rest, []byte("![CDATA[")):
					i = copyUntil(i, "]]>")
					continue
				case bytes.HasPrefix(rest, []byte("?")):
					i = copyUntil(i, "?>")
					continue
				case bytes.HasPrefix(rest, []byte("!")) && len(rest) > 1 && isNameStart(rest[1]):
					i = copyUntil(i, ">") // <!DOCTYPE …> (no internal subset in OPML)
					continue
				case len(rest) > 0 && isNameStart(rest[0]),
					len(rest) > 1 && rest[0] == '/' && isNameStart(rest[1]):
					state = inTag
				default:
					emit(i, "&lt;")
					i++
					continue
				}
			}
		case inTag:
			switch c {
			case '"', '\'':
				state, quote = inValue, c
			case '>':
				state = inText
			}
		case inValue:
			switch c {
			case quote:
				if strayQuotes && !closesValue(doc[i+1:]) {
					if c == '"' {
						emit(i, "&quot;")
					} else {
						emit(i, "&apos;")
					}
					i++
					continue
				}
				state = inTag
			case '<':
				emit(i, "&lt;")
				i++
				continue
			case '&':
				if !isReference(doc[i:]) {
					emit(i, "&amp;")
					i++
					continue
				}
			}
		}
		keep(i)
		i++
	}
	if out == nil {
		return doc
	}
	return out
}

// closesValue reports whether a quote followed by rest plausibly ends an
// attribute value (see RepairQuotes).
func closesValue(rest []byte) bool {
	skip := func(j int) int {
		for j < len(rest) && isSpace(rest[j]) {
			j++
		}
		return j
	}
	j := skip(0)
	switch {
	case j == len(rest), bytes.HasPrefix(rest[j:], []byte("?>")):
		return true
	case rest[j] == '>', bytes.HasPrefix(rest[j:], []byte("/>")):
		if rest[j] == '/' {
			j++
		}
		k := skip(j + 1)
		return k == len(rest) || rest[k] == '<'
	case isNameStart(rest[j]):
		k := j + 1
		for k < len(rest) && (isNameStart(rest[k]) || isDigit(rest[k]) || rest[k] == '-' || rest[k] == '.') {
			k++
		}
		k = skip(k)
		return k < len(rest) && rest[k] == '='
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isReference reports whether b (starting with &) begins a character
// reference or an entity reference with a plausible name.
func isReference(b []byte) bool {
	const maxName = 32
	if len(b) < 3 {
		return false
	}
	if b[1] == '#' {
		j, hex := 2, false
		if j < len(b) && (b[j] == 'x' || b[j] == 'X') {
			j, hex = j+1, true
		}
		start := j
		for j < len(b) && j-start <= 8 && (isDigit(b[j]) || hex && isHexLetter(b[j])) {
			j++
		}
		return j > start && j < len(b) && b[j] == ';'
	}
	if !isNameStart(b[1]) {
		return false
	}
	for j := 2; j < len(b) && j <= maxName; j++ {
		switch {
		case b[j] == ';':
			return true
		case isNameStart(b[j]) || isDigit(b[j]) || b[j] == '-' || b[j] == '.':
		default:
			return false
		}
	}
	return false
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= 0x80
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isHexLetter(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// The OPML 2.0 document Write produces.
type document struct {
	XMLName xml.Name      `xml:"opml"`
	Version string        `xml:"version,attr"`
	Title   string        `xml:"head>title"`
	Body    []outlineElem `xml:"body>outline"`
}

type outlineElem struct {
	Text     string        `xml:"text,attr"`
	Title    string        `xml:"title,attr,omitempty"`
	Type     string        `xml:"type,attr,omitempty"`
	XMLURL   string        `xml:"xmlUrl,attr,omitempty"`
	HTMLURL  string        `xml:"htmlUrl,attr,omitempty"`
	Children []outlineElem `xml:"outline"`
}

// Write writes outlines as an OPML 2.0 subscription list titled title. Each
// feed is an <outline type="rss" text title xmlUrl htmlUrl/>; text is always
// written (OPML 2.0 requires it) and is the Title, even when empty, so that
// Parse returns exactly what was written. Outlines with the same Folder are
// gathered into one folder outline (whose text is the Folder string as is,
// not split into nested folders), placed where the first of them appears;
// feeds without a folder stay where they are. Parse(Write(x)) equals x when
// x has no repeated XMLURL and each folder's outlines are already together.
// An outline with an empty XMLURL is an error wrapping ErrInvalidOutline.
func Write(w io.Writer, title string, outlines []Outline) error {
	doc := document{Version: "2.0", Title: title}
	folderAt := map[string]int{}
	for i, o := range outlines {
		if strings.TrimSpace(o.XMLURL) == "" {
			return fmt.Errorf("%w: outline %d (%q)", ErrInvalidOutline, i, o.Title)
		}
		e := outlineElem{Text: o.Title, Title: o.Title, Type: "rss", XMLURL: o.XMLURL, HTMLURL: o.HTMLURL}
		if o.Folder == "" {
			doc.Body = append(doc.Body, e)
			continue
		}
		k, ok := folderAt[o.Folder]
		if !ok {
			k = len(doc.Body)
			folderAt[o.Folder] = k
			doc.Body = append(doc.Body, outlineElem{Text: o.Folder, Title: o.Folder})
		}
		doc.Body[k].Children = append(doc.Body[k].Children, e)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("opml: writing: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("opml: writing: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("opml: writing: %w", err)
	}
	return nil
}
