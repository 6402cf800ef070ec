package newitems

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

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
}

// Parse parses an RSS, Atom or JSON Feed document fetched from feedURL with
// the given HTTP Content-Type (either may be empty). The body is first
// converted to UTF-8 with Decode. At most MaxItems items are looked at.
//
// Errors wrap ErrNotAFeed when the document is not a feed (HTML, unknown
// JSON, nothing recognisable), ErrInvalidFeed when a feed fails to parse
// (the parser's error is wrapped too), or ErrDecode.
func Parse(body []byte, contentType, feedURL string) (*Feed, error) {
	doc, err := Decode(body, contentType)
	if err != nil {
		return nil, err
	}
	var jf *jsonFeedExtras
	if isJSON(doc) {
		if jf, err = readJSONFeedExtras(doc); err != nil {
			return nil, err
		}
		doc = jf.doc
	} else {
		doc = stripInvalidXMLChars(doc)
	}

	p := gofeed.NewParser()
	p.KeepOriginalFeed = true // for RSS isPermaLink and JSON Feed content_text
	// Item images are not used; scanning every item's HTML for one costs a
	// fifth of the parse time.
	p.RSSTranslator = &gofeed.DefaultRSSTranslator{DisableContentImageScan: true}
	gf, err := p.Parse(bytes.NewReader(doc))
	if err != nil {
		if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidFeed, err)
	}

	base, _ := url.Parse(strings.TrimSpace(feedURL))
	if base != nil && !base.IsAbs() {
		base = nil
	}

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

	feedAuthor := personName(gf.Authors)
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
	f.Items = make([]Item, 0, n)
	seen := make(map[string]bool, n)
	for i, gi := range gf.Items[:n] {
		if gi == nil {
			continue
		}
		it := Item{
			GUID:    strings.TrimSpace(gi.GUID),
			Link:    absURL(base, firstNonEmpty(gi.Link, first(gi.Links))),
			Title:   cleanTitle(firstNonEmpty(gi.Title, mediaTitle(gi))),
			Summary: strings.TrimSpace(demoronizeString(gi.Description)),
			Author:  firstNonEmpty(personName(gi.Authors), feedAuthor),
			Updated: timeOf(gi.UpdatedParsed),
		}
		it.ContentHTML = firstNonEmpty(strings.TrimSpace(demoronizeString(gi.Content)), it.Summary)
		if rssItems != nil && it.Link == "" && rssItems[i] != nil && rssItems[i].GUID != nil &&
			!strings.EqualFold(strings.TrimSpace(rssItems[i].GUID.IsPermalink), "false") {
			if u := absURL(base, it.GUID); strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
				it.Link = u
			}
		}
		if jsonItems != nil && jsonItems[i] != nil {
			ji := jsonItems[i]
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
		if seen[it.Identity] {
			continue
		}
		seen[it.Identity] = true
		f.Items = append(f.Items, it)
	}
	return f, nil
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

// itemIdentity names an item within its feed: its GUID (RSS guid, Atom id,
// JSON Feed id) if it has one, else its link, else its title and content.
// The result is the lowercase hex SHA-256 of the chosen value with its kind
// folded into the hash input ("g:"+guid, "l:"+link, "h:"+title+NUL+content),
// so a GUID can never collide with a link or hash of the same text, and the
// title/content boundary is unambiguous. It is always 64 characters, which
// keeps the (feed, identity) unique key small. The GUID is compared exactly
// (after trimming): feeds that change the case of a GUID publish a new item.
func itemIdentity(guid, link, title, content string) string {
	h := sha256.New()
	switch {
	case guid != "":
		h.Write([]byte("g:"))
		h.Write([]byte(guid))
	case link != "":
		h.Write([]byte("l:"))
		h.Write([]byte(link))
	default:
		h.Write([]byte("h:"))
		h.Write([]byte(title))
		h.Write([]byte{0})
		h.Write([]byte(content))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cleanTitle trims a title, decodes HTML entities (feeds often escape twice)
// and folds runs of white space, newlines included, into single spaces.
func cleanTitle(s string) string {
	return strings.Join(strings.Fields(demoronizeString(html.UnescapeString(s))), " ")
}

// demoronizeString applies demoronize to text that came out of the XML
// parser, where a character reference such as &#146; became U+0092.
func demoronizeString(s string) string {
	return string(demoronize([]byte(s)))
}

// absURL resolves ref against base (which may be nil) and returns it, or ""
// when the result is not an http(s) URL. A relative reference with no base
// to resolve it against is returned as is. A reference Go cannot parse is
// kept only if it plainly starts with http:// or https://.
func absURL(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		if l := strings.ToLower(ref); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
			return ref
		}
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "": // "" only when there was no base
		return u.String()
	}
	return ""
}

// personName returns the name (else the e-mail address) of the first
// person that has one.
func personName(people []*gofeed.Person) string {
	for _, q := range people {
		if q == nil {
			continue
		}
		if s := strings.TrimSpace(q.Name); s != "" {
			return s
		}
		if s := strings.TrimSpace(q.Email); s != "" {
			return s
		}
	}
	return ""
}

// mediaTitle is the Media RSS title of an item (<media:title>, also inside
// <media:group>), the fallback for items without a title.
func mediaTitle(gi *gofeed.Item) string {
	media := gi.Extensions["media"]
	for _, e := range media["title"] {
		if strings.TrimSpace(e.Value) != "" {
			return e.Value
		}
	}
	for _, g := range media["group"] {
		for _, e := range g.Children["title"] {
			if strings.TrimSpace(e.Value) != "" {
				return e.Value
			}
		}
	}
	return ""
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// textToHTML turns plain text (JSON Feed content_text, summary) into HTML:
// escaped, with line breaks kept.
func textToHTML(s string) string {
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(html.EscapeString(s), "\n", "<br>\n")
}

// jsonFeedExtras is what Parse reads from a JSON document itself: whether
// it is a JSON Feed at all, and the WebSub hub gofeed does not keep.
type jsonFeedExtras struct {
	hub string
	doc []byte // the document, with non-string item ids made strings
}

// readJSONFeedExtras checks that a JSON document is a JSON Feed: an object
// whose "version" names jsonfeed.org, or, failing a version, that has an
// "items" array. It also coerces non-string item ids to strings, as the JSON
// Feed spec asks readers to (gofeed would reject a numeric id).
func readJSONFeedExtras(doc []byte) (*jsonFeedExtras, error) {
	var head struct {
		Version any `json:"version"`
		Hubs    []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"hubs"`
		Items []struct {
			ID stdjson.RawMessage `json:"id"`
		} `json:"items"`
	}
	if err := stdjson.Unmarshal(doc, &head); err != nil {
		var typeErr *stdjson.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		// A field of the wrong type (say a string where hubs should be):
		// fall back to the version alone.
		var v struct {
			Version any `json:"version"`
		}
		if err := stdjson.Unmarshal(doc, &v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		head.Version, head.Hubs, head.Items = v.Version, nil, nil
	}
	version, _ := head.Version.(string)
	if !strings.Contains(version, "jsonfeed.org/version") && head.Items == nil {
		return nil, fmt.Errorf("%w: JSON document is not a JSON Feed (version %q)", ErrNotAFeed, version)
	}
	x := &jsonFeedExtras{doc: doc}
	for _, h := range head.Hubs {
		if strings.EqualFold(strings.TrimSpace(h.Type), "websub") && strings.TrimSpace(h.URL) != "" {
			x.hub = h.URL
			break
		}
	}
	for _, it := range head.Items {
		id := bytes.TrimSpace(it.ID)
		if len(id) > 0 && id[0] != '"' && !bytes.Equal(id, []byte("null")) {
			x.doc = coerceJSONIDs(doc)
			break
		}
	}
	return x, nil
}

// coerceJSONIDs rewrites a JSON Feed so that every item id is a string.
// It returns doc unchanged if the rewrite fails.
func coerceJSONIDs(doc []byte) []byte {
	var m map[string]any
	d := stdjson.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return doc
	}
	items, _ := m["items"].([]any)
	for _, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			continue
		}
		switch v := o["id"].(type) {
		case nil, string:
		case stdjson.Number:
			o["id"] = v.String()
		default:
			b, err := stdjson.Marshal(v)
			if err != nil {
				return doc
			}
			o["id"] = string(b)
		}
	}
	out, err := stdjson.Marshal(m)
	if err != nil {
		return doc
	}
	return out
}
