package farm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/http"
	"reflect"
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

	wmu      sync.Mutex // serialises changes
	nextItem int        // number of the next generated item (under wmu)
	st       atomic.Pointer[state]

	lmu sync.Mutex // guards log
	log []Record

	// last is the farm time of the latest request for the document, in
	// Unix nanoseconds (0: none yet), kept even with recording off.
	last atomic.Int64
}

// state is a snapshot of everything a request needs. Never modified after
// it is stored. The body is not kept: it is rendered again, byte for byte
// the same, for each answer that carries it (see render), so that a farm
// of many feeds holds little more than their validators.
type state struct {
	sh      *shared
	items   []item // newest first
	kept    []Item // the items that are not generated (see item)
	changed time.Time
	sum     uint64 // of the body: a change of body is a change of sum

	// Header values ("" for none), ready to put in a header map as
	// etag[:] (never modified).
	etag, lastMod, link [1]string
}

// shared is a spec and what derives from it alone, shared by the feeds
// that have equal specs (see Farm.intern). Never modified.
type shared struct {
	spec      Spec
	ctype, cc [1]string
}

// noDate marks a generated item without a date.
const noDate = math.MinInt64

// item is one of a feed's items as the feed keeps it: a generated one
// (gen > 0) is rebuilt from the feed and its number when needed; any other
// is the state's kept[-gen-1].
type item struct {
	gen int
	pub int64 // generated: Published in Unix seconds, or noDate
}

func (st *state) spec() *Spec { return &st.sh.spec }

func (st *state) contentType() string { return st.sh.ctype[0] }

// header returns v as a header value, nil for "".
func header(v *[1]string) []string {
	if v[0] == "" {
		return nil
	}
	return v[:]
}

// ID returns the feed's number (its path is /f/ID).
func (f *Feed) ID() int { return f.id }

// URL returns the absolute URL of the feed.
func (f *Feed) URL() string { return f.farm.url + f.Path() }

// Path returns the path of the feed ("/f/ID").
func (f *Feed) Path() string { return "/f/" + strconv.Itoa(f.id) }

// HomeURL returns the URL of the feed's home page, an HTML page that links
// to the feed for autodiscovery.
func (f *Feed) HomeURL() string { return f.URL() + "/home" }

// Spec returns the feed's current spec.
func (f *Feed) Spec() Spec {
	s := *f.st.Load().spec()
	s.Title = f.title(&s)
	return s
}

// Items returns the feed's current items, newest first.
func (f *Feed) Items() []Item { return f.itemsOf(f.st.Load()) }

// Body returns the document a 200 answer currently carries (uncompressed).
func (f *Feed) Body() []byte { return f.render(f.st.Load()) }

// ETag returns the ETag header value currently sent ("" with ETagNone).
func (f *Feed) ETag() string { return f.st.Load().etag[0] }

// LastModified returns the Last-Modified value currently sent ("" when the
// spec sends none).
func (f *Feed) LastModified() string { return f.st.Load().lastMod[0] }

// Changed returns the farm time of the last change of the body.
func (f *Feed) Changed() time.Time { return f.st.Load().changed }

// Publish adds items at the top of the feed, with a new body, ETag and
// Last-Modified (the farm clock's now). Items without an ID get one; with
// no argument, one item dated now is generated. The new items go to the
// publication log (SetPublishLog). Last-Modified has a
// resolution of one second, as on the wire: two changes within the same
// second of farm time share it (servers behave the same).
func (f *Feed) Publish(items ...Item) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	now := f.farm.clk.Now()
	old := f.st.Load()
	all := make([]item, 0, max(len(items), 1)+len(old.items))
	kept := old.kept
	if len(items) == 0 {
		all = append(all, genRef(f.nextItem, now, old.spec().Undated))
		f.nextItem++
	} else {
		all, kept = f.keep(all, nil, items)
		kept = append(kept, old.kept...)
	}
	for _, it := range old.items {
		if it.gen < 0 {
			it.gen -= len(kept) - len(old.kept) // kept[i] moved by the new ones
		}
		all = append(all, it)
	}
	if m := old.spec().MaxItems; m > 0 && len(all) > m {
		all = all[:m]
	}
	st := f.build(old.sh, all, kept, now, old)
	f.st.Store(st)
	f.farm.logPublished(f, st, max(len(items), 1), now)
}

// SetStatus makes the feed answer code (0: serve the feed again).
func (f *Feed) SetStatus(code int) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	old := f.st.Load()
	spec := *old.spec()
	spec.Status = code
	f.st.Store(f.build(f.farm.intern(spec), old.items, old.kept, old.changed, old))
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
	f.st.Store(f.build(f.farm.intern(spec), items, old.kept, f.farm.clk.Now(), old))
}

// meta returns what a document of spec needs besides its items.
func (f *Feed) meta(spec *Spec, url string, items []Item, changed time.Time) docMeta {
	m := docMeta{
		title: f.title(spec), feedURL: self(spec, url), homeURL: url + "/home",
		broken: spec.Hostile == InvalidUTF8, updated: changed.UTC().Truncate(time.Second),
	}
	if len(items) > 0 && !items[0].Published.IsZero() {
		m.updated = items[0].Published
	}
	if spec.Hub != "" && spec.HubPlacement != HubHeader {
		m.hub = spec.Hub
	}
	return m
}

// title is the feed's title: the spec's, or "Feed ID".
func (f *Feed) title(spec *Spec) string {
	if spec.Title == "" {
		return "Feed " + strconv.Itoa(f.id)
	}
	return spec.Title
}

// self is the feed's self URL: the spec's, or url (the feed's own).
func self(spec *Spec, url string) string {
	if spec.Self == "" {
		return url
	}
	return spec.Self
}

// renderTo appends st's document to buf.
func (f *Feed) renderTo(buf *bytes.Buffer, st *state) {
	items := f.itemsOf(st)
	spec := st.spec()
	buildDoc(buf, spec.Format, spec.Hostile, f.meta(spec, f.URL(), items, st.changed), items)
}

// render returns st's document, the body of a 200.
func (f *Feed) render(st *state) []byte {
	var b bytes.Buffer
	f.renderTo(&b, st)
	return b.Bytes()
}

// build makes a snapshot. changed is the time of the change; it only
// becomes the new Last-Modified when the body differs from old's.
func (f *Feed) build(sh *shared, items []item, kept []Item, changed time.Time, old *state) *state {
	spec := &sh.spec
	s := &state{sh: sh, items: items, kept: kept, changed: changed}
	buf := f.farm.getBuf()
	f.renderTo(buf, s)
	sum := sha256.Sum256(buf.Bytes())
	f.farm.putBuf(buf)
	s.sum = binary.BigEndian.Uint64(sum[:8])
	if old != nil && old.sum == s.sum {
		s.changed = old.changed
	}
	tag := `"` + hex.EncodeToString(sum[:8]) + `"`
	switch spec.ETag {
	case ETagStrong:
		s.etag[0] = tag
	case ETagWeak:
		s.etag[0] = "W/" + tag
	}
	if spec.LastModified {
		s.lastMod[0] = s.changed.UTC().Truncate(time.Second).Format(http.TimeFormat)
	}
	if spec.Hub != "" && spec.HubPlacement != HubInFeed {
		s.link[0] = "<" + spec.Hub + `>; rel="hub", <` + self(spec, f.URL()) + `>; rel="self"`
	}
	return s
}

// intern returns the shared form of spec: the one of a feed added or
// changed lately when their specs are equal (a farm's feeds mostly are),
// else a new one.
func (fm *Farm) intern(spec Spec) *shared {
	fm.smu.Lock()
	defer fm.smu.Unlock()
	for _, sh := range fm.specs {
		if reflect.DeepEqual(sh.spec, spec) {
			return sh
		}
	}
	sh := &shared{spec: spec}
	sh.ctype[0] = contentType(&spec)
	sh.cc[0] = spec.CacheControl
	if len(fm.specs) == cap(fm.specs) {
		fm.specs = fm.specs[:copy(fm.specs, fm.specs[1:])] // forget the oldest
	}
	fm.specs = append(fm.specs, sh)
	return sh
}

// contentType is the media type spec's document is served with.
func contentType(spec *Spec) string {
	switch {
	case spec.ContentType != "":
		return spec.ContentType
	case spec.Hostile == HTMLPage:
		return "text/html; charset=utf-8"
	case spec.Hostile == EntityBomb:
		return RSS.ContentType()
	}
	return spec.Format.ContentType()
}

// notModified applies RFC 9110 §13.2.2: If-None-Match, when present, decides
// alone (weak comparison, "*" matches any current tag); otherwise
// If-Modified-Since at or after Last-Modified means not modified. The exact
// string the farm sent always matches; other dates are parsed.
func (s *state) notModified(inm, ims string) bool {
	if inm != "" {
		return s.etag[0] != "" && etagMatch(inm, s.etag[0])
	}
	lm := s.lastMod[0]
	if ims == "" || lm == "" {
		return false
	}
	if ims == lm {
		return true
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return false
	}
	return !s.changed.UTC().Truncate(time.Second).After(t)
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
