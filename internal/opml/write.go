package opml

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// The OPML 2.0 document Write produces.
type document struct {
	XMLName xml.Name      `xml:"opml"`
	Version string        `xml:"version,attr"`
	Title   string        `xml:"head>title"`
	Body    []outlineElem `xml:"body>outline"`
}

// outlineElem is one <outline> Write produces: a feed or a folder.
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
