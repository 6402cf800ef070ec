package farm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Feed is one feed of the farm. Its methods are safe for concurrent use.
// What it serves is an immutable snapshot swapped atomically on every
// change, so the request path takes no lock but the feed's own log mutex.
type Feed struct {
	farm *Farm
	id   int
	path string
	url  string

	wmu      sync.Mutex // serialises changes
	nextItem int        // number of the next generated item (under wmu)
	st       atomic.Pointer[state]

	lmu sync.Mutex // guards log
	log []Record
}

// state is a snapshot of everything a request needs. Never modified after
// it is stored.
type state struct {
	spec        Spec
	items       []Item // newest first
	changed     time.Time
	body        []byte
	etag        string
	lastMod     time.Time // changed, truncated to the second
	lastModStr  string
	contentType string
	link        string // Link header ("" for none)

	gzOnce sync.Once
	gz     []byte
}

// gzipped returns the gzip encoding of the body, computed once.
func (s *state) gzipped() []byte {
	s.gzOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		_, _ = zw.Write(s.body)
		_ = zw.Close()
		s.gz = b.Bytes()
	})
	return s.gz
}

// ID returns the feed's number (its path is /f/ID).
func (f *Feed) ID() int { return f.id }

// URL returns the absolute URL of the feed.
func (f *Feed) URL() string { return f.url }

// Path returns the path of the feed ("/f/ID").
func (f *Feed) Path() string { return f.path }

// HomeURL returns the URL of the feed's home page, an HTML page that links
// to the feed for autodiscovery.
func (f *Feed) HomeURL() string { return f.url + "/home" }

// Spec returns the feed's current spec.
func (f *Feed) Spec() Spec { return f.st.Load().spec }

// Items returns the feed's current items, newest first.
func (f *Feed) Items() []Item { return slices.Clone(f.st.Load().items) }

// Body returns the document a 200 answer currently carries (uncompressed).
func (f *Feed) Body() []byte { return f.st.Load().body }

// ETag returns the ETag header value currently sent ("" with ETagNone).
func (f *Feed) ETag() string { return f.st.Load().etag }

// LastModified returns the Last-Modified value currently sent ("" when the
// spec sends none).
func (f *Feed) LastModified() string { return f.st.Load().lastModStr }

// Changed returns the farm time of the last change of the body.
func (f *Feed) Changed() time.Time { return f.st.Load().changed }

// Publish adds items at the top of the feed, with a new body, ETag and
// Last-Modified (the farm clock's now). Items without an ID get one; with
// no argument, one item dated now is generated. Last-Modified has a
// resolution of one second, as on the wire: two changes within the same
// second of farm time share it (servers behave the same).
func (f *Feed) Publish(items ...Item) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	now := f.farm.clk.Now()
	old := f.st.Load()
	if len(items) == 0 {
		items = []Item{f.genItem(f.nextItem, now, old.spec.Undated)}
		f.nextItem++
	} else {
		items = slices.Clone(items)
		for i := range items {
			f.fillItem(&items[i])
		}
	}
	all := make([]Item, 0, len(items)+len(old.items))
	all = append(all, items...)
	all = append(all, old.items...)
	if m := old.spec.MaxItems; m > 0 && len(all) > m {
		all = all[:m]
	}
	f.st.Store(f.build(old.spec, all, now, old))
}

// SetStatus makes the feed answer code (0: serve the feed again).
func (f *Feed) SetStatus(code int) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	old := f.st.Load()
	spec := old.spec
	spec.Status = code
	f.st.Store(f.build(spec, old.items, old.changed, old))
}

// SetSpec replaces the feed's spec. The items stay (Spec.Items and
// ItemCount only matter to AddFeed); when the document changes, so do the
// ETag and Last-Modified (farm now).
func (f *Feed) SetSpec(spec Spec) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	old := f.st.Load()
	items := old.items
	if m := spec.MaxItems; m > 0 && len(items) > m {
		items = items[:m]
	}
	f.st.Store(f.build(spec, items, f.farm.clk.Now(), old))
}

func (f *Feed) genItem(k int, date time.Time, undated bool) Item {
	it := Item{
		ID:      "farm:f" + strconv.Itoa(f.id) + ":i" + strconv.Itoa(k),
		Title:   "Item " + strconv.Itoa(k) + " of feed " + strconv.Itoa(f.id),
		Link:    f.url + "/i/" + strconv.Itoa(k),
		Content: "<p>Item " + strconv.Itoa(k) + " of feed " + strconv.Itoa(f.id) + ", posted on the feed farm.</p>",
	}
	if !undated {
		it.Published = date.UTC().Truncate(time.Second)
	}
	return it
}

func (f *Feed) fillItem(it *Item) {
	if it.ID == "" {
		it.ID = "farm:f" + strconv.Itoa(f.id) + ":i" + strconv.Itoa(f.nextItem)
		f.nextItem++
	}
	if it.Title == "" {
		it.Title = it.ID
	}
	if !it.Published.IsZero() {
		it.Published = it.Published.UTC()
	}
}

// build renders a snapshot. changed is the time of the change; it only
// becomes the new Last-Modified when the body differs from old's.
func (f *Feed) build(spec Spec, items []Item, changed time.Time, old *state) *state {
	if spec.Title == "" {
		spec.Title = "Feed " + strconv.Itoa(f.id)
	}
	self := spec.Self
	if self == "" {
		self = f.url
	}
	m := docMeta{
		title: spec.Title, feedURL: self, homeURL: f.HomeURL(),
		broken: spec.Hostile == InvalidUTF8, updated: changed.UTC().Truncate(time.Second),
	}
	if len(items) > 0 && !items[0].Published.IsZero() {
		m.updated = items[0].Published
	}
	if spec.Hub != "" && spec.HubPlacement != HubHeader {
		m.hub = spec.Hub
	}
	s := &state{spec: spec, items: items}
	s.body = buildDoc(spec.Format, spec.Hostile, m, items)
	if old != nil && bytes.Equal(old.body, s.body) {
		changed = old.changed
	}
	s.changed = changed
	sum := sha256.Sum256(s.body)
	tag := `"` + hex.EncodeToString(sum[:8]) + `"`
	switch spec.ETag {
	case ETagStrong:
		s.etag = tag
	case ETagWeak:
		s.etag = "W/" + tag
	}
	if spec.LastModified {
		s.lastMod = changed.UTC().Truncate(time.Second)
		s.lastModStr = s.lastMod.Format(http.TimeFormat)
	}
	switch {
	case spec.ContentType != "":
		s.contentType = spec.ContentType
	case spec.Hostile == HTMLPage:
		s.contentType = "text/html; charset=utf-8"
	case spec.Hostile == EntityBomb:
		s.contentType = RSS.ContentType()
	default:
		s.contentType = spec.Format.ContentType()
	}
	if spec.Hub != "" && spec.HubPlacement != HubInFeed {
		s.link = "<" + spec.Hub + `>; rel="hub", <` + self + `>; rel="self"`
	}
	return s
}

// notModified applies RFC 9110 §13.2.2: If-None-Match, when present, decides
// alone (weak comparison, "*" matches any current tag); otherwise
// If-Modified-Since at or after Last-Modified means not modified. The exact
// string the farm sent always matches; other dates are parsed.
func (s *state) notModified(inm, ims string) bool {
	if inm != "" {
		return s.etag != "" && etagMatch(inm, s.etag)
	}
	if ims == "" || s.lastModStr == "" {
		return false
	}
	if ims == s.lastModStr {
		return true
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return false
	}
	return !s.lastMod.After(t)
}

// etagMatch reports whether the If-None-Match list matches tag by weak
// comparison (RFC 9110 §8.8.3.2: W/ prefixes ignored, opaque tags equal).
func etagMatch(list, tag string) bool {
	want := opaque(tag)
	for list != "" {
		list = strings.TrimLeft(list, " \t,")
		if list == "" {
			break
		}
		if list[0] == '*' {
			return true
		}
		var cand string
		rest := strings.TrimPrefix(list, "W/")
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				cand, list = rest, ""
			} else {
				cand, list = rest[:end+2], rest[end+2:]
			}
		} else {
			// Unquoted (non-conforming) tag: up to the next comma.
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			cand, list = strings.TrimSpace(rest[:end]), rest[end:]
		}
		if cand == want {
			return true
		}
	}
	return false
}

func opaque(tag string) string { return strings.TrimPrefix(tag, "W/") }

func (f *Feed) record(r Record) {
	if f.farm.noRecord.Load() {
		return
	}
	f.lmu.Lock()
	f.log = append(f.log, r)
	f.lmu.Unlock()
}
