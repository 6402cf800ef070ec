package newitems

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/mmcdole/gofeed"
	gjson "github.com/mmcdole/gofeed/json"
	"github.com/mmcdole/gofeed/rss"
)

// MaxItems is how many items of a feed Parse looks at: the first MaxItems in
// document order. Feeds list newest first almost without exception, so these
// are the ones that can be new; the rest are counted in Feed.ItemsSeen only.
const MaxItems = 1000

var (
	// ErrNotAFeed is wrapped by Parse when the document is not RSS, Atom or
	// JSON Feed (for example an HTML page, an empty body, or arbitrary JSON).
	ErrNotAFeed = errors.New("newitems: not a feed")
	// ErrInvalidFeed is wrapped by Parse when the document looks like a feed
	// but the parser rejected it; the parser's own error is wrapped too.
	ErrInvalidFeed = errors.New("newitems: invalid feed")
)

// Document is a feed document as Parse read it, with the size of the body
// it came from: what a caller that parsed a document hands on, so that it
// is not parsed twice (the check of a signup or an OPML import, recorded
// as the feed's baseline).
type Document struct {
	Feed  *Feed
	Bytes int64
	// Fetch is the answer the body came in (its Body dropped) and FetchedAt
	// when its request went out: with them the document counts as a poll
	// of the feed (validators kept, next poll scheduled). Nil: it counts
	// for its items only.
	Fetch     *fetcher.Response
	FetchedAt time.Time
}

// Feed is what feedmail keeps of a parsed feed.
type Feed struct {
	// Title is the feed's title, cleaned like Item.Title.
	Title string
	// SiteURL is the web site the feed belongs to (RSS <link>, Atom
	// rel="alternate", JSON Feed home_page_url), absolute.
	SiteURL string
	// HubURL and SelfURL are the WebSub hub and the feed's own URL as the
	// feed declares them (Atom <link rel="hub|self">, RSS <atom:link>, JSON
	// Feed hubs[type=WebSub] and feed_url), absolute; empty if absent.
	HubURL, SelfURL string
	// Language is the feed's declared language, as written.
	Language string
	// Items are the first MaxItems items in document order, without
	// repeated identities (the first occurrence is kept).
	Items []Item
	// ItemsSeen is how many items the document holds, before the MaxItems
	// cap and before removing repeated identities.
	ItemsSeen int
	// Warning is set when the document gave a feed, but not all of it: it
	// stops before its closing tags and only the items complete before the
	// cut were kept (WarnTruncated), or it holds item markup the parser
	// found no item in (WarnItemsUnseen). Nil for a sound document,
	// including one that has no items at all.
	Warning *Warning
}

// Item is one entry of a feed.
type Item struct {
	// Identity names the item within its feed; see itemIdentity.
	Identity string
	// GUID is the RSS guid, Atom id or JSON Feed id, trimmed.
	GUID string
	// Link is the item's URL, made absolute against xml:base and the feed
	// URL. Links that resolve to a scheme other than http or https (such as
	// javascript:) are dropped. An RSS item without <link> whose guid is a
	// permalink URL uses the guid.
	Link string
	// Title is trimmed, has HTML entities decoded and runs of white space
	// (including newlines) folded to one space, since it ends up in a mail
	// Subject. Markup in titles is kept as text; it is not stripped.
	Title string
	// ContentHTML is the full content (RSS content:encoded, Atom content,
	// JSON Feed content_html), else the description/summary. JSON Feed plain
	// text (content_text, summary) is escaped into HTML.
	ContentHTML string
	// Summary is the RSS description or Atom summary (HTML as the feed has
	// it), or the JSON Feed summary (plain text, escaped into HTML).
	Summary string
	// Author is the item's first author (name, else e-mail address), else
	// the feed's author.
	Author string
	// Published is when the item was published, else when it was updated;
	// zero when the item carries no date gofeed understands. UTC.
	Published time.Time
	// Updated is when the item was last updated, zero if not given. UTC.
	Updated time.Time
	// Media is what the feed says about the item's enclosures, thumbnail
	// and media description (see Media). It is not part of the identity.
	Media Media
}

// Parse parses an RSS, Atom or JSON Feed document fetched from feedURL with
// the given HTTP Content-Type (either may be empty). The body is first
// converted to UTF-8 with Decode. At most MaxItems items are looked at.
//
// An RSS or Atom document that stops before its end (a truncated transfer,
// a generator that crashed) is cut after its last complete item, closed and
// parsed again: the items complete before the cut are returned, never the
// one cut short, and Feed.Warning says so. A feed that parses to no items
// although it holds item markup gets a Warning too.
//
// Errors wrap ErrNotAFeed when the document is not a feed (HTML, unknown
// JSON, nothing recognisable), ErrInvalidFeed when a feed fails to parse
// and holds no complete item to salvage (the parser's error is wrapped too),
// or ErrDecode.
func Parse(body []byte, contentType, feedURL string) (*Feed, error) {
	doc, jf, err := prepare(body, contentType)
	if err != nil {
		return nil, err
	}
	gf, err := parseGofeed(doc)
	var cut *truncation
	if err != nil {
		if jf != nil || !errors.Is(err, ErrInvalidFeed) {
			return nil, err
		}
		fixed, tr, ok := salvageTruncated(doc)
		if !ok {
			return nil, err
		}
		sgf, serr := parseGofeed(fixed)
		if serr != nil || len(sgf.Items) == 0 {
			return nil, err
		}
		gf, doc, cut = sgf, fixed, &tr
	}
	base, _ := url.Parse(strings.TrimSpace(feedURL))
	if base != nil && !base.IsAbs() {
		base = nil
	}
	f := feedHeader(gf, doc, jf, base)
	f.Items = feedItems(gf, base)
	switch {
	case cut != nil:
		f.Warning = truncatedWarning(*cut, len(gf.Items))
	case len(gf.Items) > 0:
	case jf != nil:
		if jf.items > 0 {
			f.Warning = &Warning{Kind: WarnItemsUnseen, ItemMarkup: jf.items,
				Text: "the document has " + plural(jf.items, "entry", "entries") + ` in "items" but the parser found none`}
		}
	default:
		f.Warning = unseenItemsWarning(scanItemMarkup(doc))
	}
	return f, nil
}

// prepare returns the document as gofeed should read it: UTF-8, and for
// JSON checked to be a JSON Feed (with its extras, which are nil for XML)
// and for XML stripped of the characters XML forbids.
func prepare(body []byte, contentType string) ([]byte, *jsonFeedExtras, error) {
	doc, err := Decode(body, contentType)
	if err != nil {
		return nil, nil, err
	}
	if !isJSON(doc) {
		return stripInvalidXMLChars(doc), nil, nil
	}
	jf, err := readJSONFeedExtras(doc)
	if err != nil {
		return nil, nil, err
	}
	return jf.doc, jf, nil
}

// parseGofeed parses doc with gofeed (never fetching anything); errors
// wrap ErrNotAFeed or ErrInvalidFeed.
func parseGofeed(doc []byte) (*gofeed.Feed, error) {
	p := gofeed.NewParser()
	p.KeepOriginalFeed = true // for RSS isPermaLink and JSON Feed content_text
	// Item images are not used: skip scanning every item's HTML for one.
	p.RSSTranslator = &gofeed.DefaultRSSTranslator{DisableContentImageScan: true}
	gf, err := p.Parse(bytes.NewReader(doc))
	if err != nil {
		if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidFeed, err)
	}
	return gf, nil
}

// feedHeader returns the feed's own fields, without items. The hub and
// self links come from the JSON Feed extras, or for XML from the header
// scan (self falling back to gofeed's feed link).
func feedHeader(gf *gofeed.Feed, doc []byte, jf *jsonFeedExtras, base *url.URL) *Feed {
	f := &Feed{
		Title:     cleanTitle(gf.Title),
		SiteURL:   absURL(base, gf.Link),
		Language:  strings.TrimSpace(gf.Language),
		ItemsSeen: len(gf.Items),
	}
	switch {
	case jf != nil:
		f.HubURL = absURL(base, jf.hub)
		f.SelfURL = absURL(base, gf.FeedLink)
	default:
		hub, self := scanXMLLinks(doc, base)
		f.HubURL, f.SelfURL = hub, self
		if f.SelfURL == "" {
			f.SelfURL = absURL(base, gf.FeedLink)
		}
	}
	return f
}

// feedItems returns the first MaxItems items in document order, dropping
// repeated identities (the first is kept).
func feedItems(gf *gofeed.Feed, base *url.URL) []Item {
	feedAuthor := personName(gf.Authors)
	// The original RSS or JSON items, when they line up with gofeed's.
	var rssItems []*rss.Item
	var jsonItems []*gjson.Item
	switch o := gf.OriginalFeed().(type) {
	case *rss.Feed:
		if len(o.Items) == len(gf.Items) {
			rssItems = o.Items
		}
	case *gjson.Feed:
		if len(o.Items) == len(gf.Items) {
			jsonItems = o.Items
		}
	}

	n := min(len(gf.Items), MaxItems)
	items := make([]Item, 0, n)
	seen := make(map[string]bool, n)
	for i, gi := range gf.Items[:n] {
		if gi == nil {
			continue
		}
		var ri *rss.Item
		if rssItems != nil {
			ri = rssItems[i]
		}
		var ji *gjson.Item
		if jsonItems != nil {
			ji = jsonItems[i]
		}
		it := buildItem(gi, ri, ji, base, feedAuthor)
		if seen[it.Identity] {
			continue
		}
		seen[it.Identity] = true
		items = append(items, it)
	}
	return items
}

// buildItem returns one item with its identity. ri and ji are the original
// RSS or JSON Feed item, or nil: an RSS item without a link takes its
// permalink guid, and a JSON Feed item's plain text is escaped into HTML.
func buildItem(gi *gofeed.Item, ri *rss.Item, ji *gjson.Item, base *url.URL, feedAuthor string) Item {
	it := Item{
		GUID:    strings.TrimSpace(gi.GUID),
		Link:    absURL(base, firstNonEmpty(gi.Link, first(gi.Links))),
		Title:   cleanTitle(firstNonEmpty(gi.Title, mediaTitle(gi))),
		Summary: strings.TrimSpace(demoronizeString(gi.Description)),
		Author:  firstNonEmpty(personName(gi.Authors), feedAuthor),
		Updated: timeOf(gi.UpdatedParsed),
	}
	it.ContentHTML = firstNonEmpty(strings.TrimSpace(demoronizeString(gi.Content)), it.Summary)
	if ri != nil && it.Link == "" && ri.GUID != nil &&
		!strings.EqualFold(strings.TrimSpace(ri.GUID.IsPermalink), "false") {
		if u := absURL(base, it.GUID); strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			it.Link = u
		}
	}
	if ji != nil {
		it.Summary = textToHTML(strings.TrimSpace(ji.Summary))
		switch {
		case strings.TrimSpace(ji.ContentHTML) != "":
			it.ContentHTML = strings.TrimSpace(ji.ContentHTML)
		case strings.TrimSpace(ji.ContentText) != "":
			it.ContentHTML = textToHTML(strings.TrimSpace(ji.ContentText))
		default:
			it.ContentHTML = it.Summary
		}
	}
	it.Published = timeOf(gi.PublishedParsed)
	if it.Published.IsZero() {
		it.Published = it.Updated
	}
	it.Identity = itemIdentity(it.GUID, it.Link, it.Title, it.ContentHTML)
	it.Media = itemMedia(gi, ji, base)
	return it
}

// stripInvalidXMLChars removes the characters XML 1.0 forbids (C0 controls
// other than tab, newline and carriage return; U+FFFE and U+FFFF), which
// real feeds contain often enough and which make Go's XML decoder give up on
// the whole document. doc must be valid UTF-8; it is returned as is when
// there is nothing to remove.
func stripInvalidXMLChars(doc []byte) []byte {
	bad := func(r rune) bool {
		return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF
	}
	if bytes.IndexFunc(doc, bad) < 0 {
		return doc
	}
	out := make([]byte, 0, len(doc))
	for _, r := range string(doc) {
		if !bad(r) {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}
