// Package opml reads and writes OPML subscription lists, the format feed
// readers import and export.
//
// Parse is tolerant: it repairs the two malformations real exports are full
// of (a bare & and a < inside attribute values), reads any encoding, accepts
// xmlUrl however it is capitalised, flattens folders and drops repeated
// feeds. Write produces OPML 2.0 that Parse reads back unchanged. Folder
// reads a folder of lists, one file per person, a few names at a time.
//
// It must not fetch a feed, check an address or touch the store: it reads
// and writes the files only, and its callers (package subscribe, the web
// and command-line imports and exports) decide what to do with each entry.
package opml

import (
	"errors"
	"fmt"
	"io"

	"github.com/feedmail/feedmail/internal/newitems"
)

const (
	// MaxFeeds is the most feeds (distinct xmlUrls) Parse returns; a list
	// with more is refused with a *TooManyFeedsError, which says how many
	// it has. Folders do not count.
	MaxFeeds = 10000
	// MaxElements and MaxDepth bound what Parse reads of any document,
	// whatever its elements are (feeds, folders, anything else), so that a
	// hostile file costs little: more elements, or elements nested deeper,
	// are refused with ErrTooLarge. Real lists of MaxFeeds feeds, folders
	// and all, stay far below both.
	MaxElements = 200000
	MaxDepth    = 100
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
	// ErrTooLarge is wrapped when the document exceeds MaxBytes,
	// MaxElements or MaxDepth, or lists more than MaxFeeds feeds.
	ErrTooLarge = errors.New("opml: document too large")
	// ErrMalformed is wrapped when an OPML document is broken beyond what
	// Parse repairs; the XML error is wrapped too.
	ErrMalformed = errors.New("opml: malformed document")
	// ErrInvalidOutline is wrapped by Write for an outline without XMLURL.
	ErrInvalidOutline = errors.New("opml: outline without xmlUrl")
)

// TooManyFeedsError is the error of a list with more than Limit (MaxFeeds)
// feeds: it has Feeds. It wraps ErrTooLarge.
type TooManyFeedsError struct{ Feeds, Limit int }

func (e *TooManyFeedsError) Error() string {
	return fmt.Sprintf("%v: the list has %d feeds, more than the %d one import takes; split it into smaller lists",
		ErrTooLarge, e.Feeds, e.Limit)
}

func (e *TooManyFeedsError) Unwrap() error { return ErrTooLarge }

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
// Errors wrap ErrNotOPML, ErrNoFeeds, ErrTooLarge (a *TooManyFeedsError
// for more than MaxFeeds feeds) or ErrMalformed, or the reader's error.
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
