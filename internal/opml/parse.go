package opml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// parseDoc reads the feeds of a repaired UTF-8 OPML document (see Parse
// for what counts as a feed and which errors it returns).
func parseDoc(doc []byte) ([]Outline, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	// The document is UTF-8 now, whatever its declaration still says.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }

	p := &docReader{seen: map[string]bool{}}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if err := p.readError(err); err != nil {
				return nil, err
			}
			break // cut short, or junk after the root element: keep what was read
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := p.start(t); err != nil {
				return nil, err
			}
		case xml.EndElement:
			if len(p.stack) > 0 {
				p.stack = p.stack[:len(p.stack)-1]
			}
		}
	}
	if !p.rootSeen {
		return nil, fmt.Errorf("%w: no root element", ErrNotOPML)
	}
	if len(p.out) == 0 {
		return nil, ErrNoFeeds
	}
	if len(p.seen) > MaxFeeds {
		return nil, &TooManyFeedsError{Feeds: len(p.seen), Limit: MaxFeeds}
	}
	return p.out, nil
}

// docReader is parseDoc's state: the open elements, the feeds read so far
// (the first MaxFeeds), the URLs already seen (all of them, so that a list
// too long can say how long it is) and the elements read.
type docReader struct {
	stack    []frame
	out      []Outline
	seen     map[string]bool
	rootSeen bool
	elements int
}

// frame is one open element.
type frame struct {
	outline bool
	folder  string // this outline's name, if it is a folder candidate
	isFeed  bool
}

// readError returns the error that ends the parse, or nil when the
// document was only cut short or has junk after its root element, so the
// outlines read so far stand.
func (p *docReader) readError(err error) error {
	if !p.rootSeen {
		return fmt.Errorf("%w: %w", ErrNotOPML, err)
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) && (se.Msg == "unexpected EOF" || len(p.stack) == 0) {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// start opens an element: it checks the root is <opml>, counts elements
// against MaxElements and their nesting against MaxDepth, and records a
// feed outline not seen before (the first MaxFeeds of them).
func (p *docReader) start(t xml.StartElement) error {
	name := strings.ToLower(t.Name.Local)
	if !p.rootSeen {
		if name != "opml" {
			return fmt.Errorf("%w: root element is <%s>", ErrNotOPML, t.Name.Local)
		}
		p.rootSeen = true
	}
	if p.elements++; p.elements > MaxElements {
		return fmt.Errorf("%w: more than %d elements", ErrTooLarge, MaxElements)
	}
	if len(p.stack) >= MaxDepth {
		return fmt.Errorf("%w: elements nested more than %d deep", ErrTooLarge, MaxDepth)
	}
	if name != "outline" {
		p.stack = append(p.stack, frame{})
		return nil
	}
	a := readAttrs(t)
	label := clean(a.text)
	if label == "" {
		label = clean(a.title)
	}
	// Liferea marks a nested subscription list as type="source"; it is
	// not a feed.
	f := frame{outline: true, folder: label, isFeed: a.xmlURL != "" && !strings.EqualFold(a.typ, "source")}
	if f.isFeed && !p.seen[a.xmlURL] {
		p.seen[a.xmlURL] = true
		if len(p.out) < MaxFeeds {
			p.out = append(p.out, Outline{Title: label, XMLURL: a.xmlURL, HTMLURL: a.htmlURL, Folder: p.folderPath()})
		}
	}
	p.stack = append(p.stack, f)
	return nil
}

// folderPath names the folders around the current element, outermost
// first, joined with FolderSeparator.
func (p *docReader) folderPath() string {
	var names []string
	for _, f := range p.stack {
		if f.outline && !f.isFeed && f.folder != "" {
			names = append(names, f.folder)
		}
	}
	return strings.Join(names, FolderSeparator)
}

// outlineAttrs are the attributes of an <outline> that Parse reads.
type outlineAttrs struct {
	text, title, typ, xmlURL, htmlURL string
}

// readAttrs returns an outline's attributes, names matched in any case;
// type and the URLs are trimmed.
func readAttrs(t xml.StartElement) outlineAttrs {
	var a outlineAttrs
	for _, at := range t.Attr {
		switch strings.ToLower(at.Name.Local) {
		case "text":
			a.text = at.Value
		case "title":
			a.title = at.Value
		case "type":
			a.typ = strings.TrimSpace(at.Value)
		case "xmlurl":
			a.xmlURL = strings.TrimSpace(at.Value)
		case "htmlurl":
			a.htmlURL = strings.TrimSpace(at.Value)
		}
	}
	return a
}

// clean trims s and folds runs of white space to one space.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }
