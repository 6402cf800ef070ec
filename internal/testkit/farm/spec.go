package farm

import (
	"net/http"
	"time"
)

// Format is the syndication format a feed is served in.
type Format int

// Formats.
const (
	RSS      Format = iota // RSS 2.0
	Atom                   // Atom 1.0
	JSONFeed               // JSON Feed 1.1
)

// String returns "rss", "atom" or "json".
func (f Format) String() string {
	switch f {
	case Atom:
		return "atom"
	case JSONFeed:
		return "json"
	}
	return "rss"
}

// ContentType is the media type a feed of this format is served with.
func (f Format) ContentType() string {
	switch f {
	case Atom:
		return "application/atom+xml; charset=utf-8"
	case JSONFeed:
		return "application/feed+json; charset=utf-8"
	}
	return "application/rss+xml; charset=utf-8"
}

// ETagMode says whether and how a feed sends an ETag.
type ETagMode int

// ETag modes. The tag itself is derived from the body, so it changes
// exactly when the body does.
const (
	ETagNone   ETagMode = iota
	ETagStrong          // "0123abcd..."
	ETagWeak            // W/"0123abcd..."
)

// Hostile selects a misbehaving server.
type Hostile int

// Hostile modes. Endless, Trickle, GzipBomb, HugeItems, Reset, LyingLength
// and RedirectLoop ignore validators (no 304) and are not cached bodies; the
// body variants HTMLPage, InvalidUTF8 and EntityBomb are precomputed and go
// through the normal conditional logic.
const (
	Benign Hostile = iota
	// Endless sends a 200 feed whose body never ends (it stops when the
	// client goes away, or after 1 GiB so a forgotten test ends by itself).
	Endless
	// Trickle sends the feed one byte per Spec.TrickleEvery (default 1 s).
	Trickle
	// GzipBomb sends Content-Encoding: gzip whose body inflates to
	// Spec.BombBytes (default 1 GiB) of zeros, about 1/1000 of it on the wire.
	GzipBomb
	// HTMLPage serves an HTML page (text/html) instead of a feed.
	HTMLPage
	// Reset hijacks the connection and closes it with a TCP RST, before any
	// response byte.
	Reset
	// LyingLength sends a Content-Length 1000 bytes longer than the body,
	// then closes the connection.
	LyingLength
	// InvalidUTF8 puts bytes that are not UTF-8 in the feed and item titles
	// (the document still claims UTF-8).
	InvalidUTF8
	// EntityBomb serves an RSS document with a "billion laughs" DOCTYPE
	// (whatever Spec.Format says).
	EntityBomb
	// HugeItems streams Spec.ItemCount items (e.g. 1,000,000), generated
	// while writing instead of kept in memory.
	HugeItems
	// RedirectLoop redirects the feed to itself with Spec.RedirectStatus
	// (default 302), forever.
	RedirectLoop
)

// HubPlacement says where a feed advertises its WebSub hub and self URL.
type HubPlacement int

// Hub placements.
const (
	HubBoth   HubPlacement = iota // Link header and in the document
	HubHeader                     // only the Link header
	HubInFeed                     // only in the document
)

// Item is one entry of a feed.
type Item struct {
	ID      string // guid / id; generated when empty
	Title   string
	Link    string
	Content string // HTML
	// Published is the item's date; the zero time means the item carries no
	// date at all (new-item rules treat dateless items differently).
	Published time.Time
}

// Spec describes a feed and how its server behaves. The zero Spec is an
// RSS 2.0 feed with no items, no validators and no caching headers.
type Spec struct {
	Format Format
	Title  string // default "Feed N"

	// Items are the initial items, newest first. When nil, ItemCount items
	// are generated, ItemInterval apart (default 24 h), the newest dated at
	// the farm clock's now, without dates if Undated.
	Items        []Item
	ItemCount    int
	ItemInterval time.Duration
	Undated      bool
	// MaxItems keeps only the newest MaxItems items after a Publish (0: all).
	MaxItems int

	ETag         ETagMode
	LastModified bool // send Last-Modified: the farm time of the last change
	CacheControl string
	// Expires, when not zero, sends Expires = farm now + Expires (negative
	// for a date in the past). A raw value ("0", garbage) goes in Header.
	Expires time.Duration
	// Header holds extra headers sent on 200 and 304 answers (Age, Vary, a
	// raw Expires, ...). They are added after the farm's own.
	Header http.Header
	// ContentType overrides the format's media type (text/html for a feed
	// served wrong, ...).
	ContentType string
	Gzip        bool // gzip the body when the client accepts it

	// Latency delays every answer by this much real time (the farm clock is
	// not advanced: a fake clock would make latency meaningless).
	Latency time.Duration

	// Status, when not zero, is answered instead of the feed (404, 410, 429,
	// 500, 503, ...), with RetryAfter as Retry-After when set.
	Status     int
	RetryAfter string

	// Hub advertises a WebSub hub (where: HubPlacement) together with Self,
	// the feed's self URL (default: the feed's own URL). Self is always in
	// the document; it is in the Link header only when Hub is set.
	Hub          string
	HubPlacement HubPlacement
	Self         string

	// RedirectTo, when set, answers every request with RedirectStatus
	// (default 301) and Location: RedirectTo (typically another feed's URL).
	RedirectTo     string
	RedirectStatus int

	Hostile      Hostile
	TrickleEvery time.Duration // Trickle: time between bytes, default 1 s
	BombBytes    int64         // GzipBomb: inflated size, default 1 GiB
}

// HubAdvertised reports whether the i-th feed (from 0) of a farm whose
// feeds advertise a hub in the proportion share (0–1) advertises it: the
// advertising feeds are spread evenly (share 0.5: every second one), so a
// farm and a bench that know i and share agree without talking.
func HubAdvertised(i int, share float64) bool {
	if share >= 1 {
		return true
	}
	if share <= 0 || i < 0 {
		return false
	}
	return int(float64(i+1)*share) > int(float64(i)*share)
}
