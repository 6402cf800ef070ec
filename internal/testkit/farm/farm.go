// Package farm is a fake feed host for tests, simulations and benchmarks:
// thousands of feeds on one loopback listener, each with its own formats,
// validators, caching headers, status codes, redirects, WebSub hubs and
// hostile behaviours, all switchable at run time, and a record of every
// request it received so tests can check what a publisher would see in
// their logs.
//
// Times in Date, Last-Modified and Expires, and in the request records, come
// from the farm's clock, so a simulation can drive it with a fake clock.
// Latency and the Trickle mode are real time: they exist to exercise
// network timeouts.
//
// The request path is built to be fast: every feed keeps an immutable,
// pre-rendered snapshot (body, gzip body, validators, headers) that is
// swapped atomically when it changes, and its own request log behind its
// own mutex, so requests for different feeds share no lock.
package farm

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// Record is one request the farm received.
type Record struct {
	Seq        uint64    // order of arrival, from 1, over the whole farm
	Time       time.Time // farm clock at arrival
	FeedID     int       // the feed the path belongs to (its home and item pages too); 0 for others
	Method     string
	Path       string
	Query      string // raw query; "" when none (a poller must never add one)
	Proto      string
	RemoteAddr string // client address:port; distinct ports = distinct connections

	IfNoneMatch     string
	IfModifiedSince string
	UserAgent       string
	Accept          string
	AcceptEncoding  string
	Cookie          string
	Referer         string

	// Status is the status code answered; 0 when no HTTP answer was sent
	// (Reset, or the client went away during Latency).
	Status int
}

// Farm is a running fake feed host. Create it with New or Listen, stop it
// with Close.
type Farm struct {
	clk clock.Clock
	ln  net.Listener
	srv *http.Server
	url string

	mu    sync.RWMutex // guards feeds and sites
	feeds []*Feed      // feeds[i] has ID i+1
	sites [][]byte     // sites[i] is the page of /s/i+1

	seq   atomic.Uint64
	date  atomic.Pointer[dateCache]
	miscM sync.Mutex // guards misc
	misc  []Record   // requests for paths that are not a feed's

	// Long-running handlers (latency, hostile streams) are counted so Close
	// can wait for them; the fast path is not.
	lmu     sync.Mutex
	closed  bool
	running sync.WaitGroup

	bombOnce   sync.Once
	bombMember []byte

	// Feed requests being answered now, and the most at once since the
	// farm started or was Reset: what "requests in flight to this host"
	// means to a publisher.
	inFlight, maxInFlight atomic.Int64
}

type dateCache struct {
	sec int64
	s   string
}

// New starts a farm on a random loopback port (127.0.0.1:0). It panics if
// no port can be had, like httptest.NewServer.
func New(clk clock.Clock) *Farm {
	f, err := Listen(clk, "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("farm: %v", err))
	}
	return f
}

// Listen starts a farm on addr ("127.0.0.1:8090").
func Listen(clk clock.Clock, addr string) (*Farm, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("farm: listen on %s: %w", addr, err)
	}
	return Serve(clk, ln), nil
}

// Serve starts a farm on ln; Close closes ln.
func Serve(clk clock.Clock, ln net.Listener) *Farm {
	if clk == nil {
		clk = clock.Real{}
	}
	f := &Farm{clk: clk, ln: ln, url: "http://" + ln.Addr().String()}
	f.srv = &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// Hostile modes make the server log broken connections: not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = f.srv.Serve(ln) }()
	return f
}

// URL returns the base URL of the farm ("http://127.0.0.1:PORT").
func (fm *Farm) URL() string { return fm.url }

// Clock returns the farm's clock.
func (fm *Farm) Clock() clock.Clock { return fm.clk }

// Close stops the listener, closes every connection and waits for the
// long-running handlers (latency, trickle, endless streams) to return.
func (fm *Farm) Close() {
	fm.lmu.Lock()
	already := fm.closed
	fm.closed = true
	fm.lmu.Unlock()
	if already {
		return
	}
	_ = fm.srv.Close()
	fm.running.Wait()
}

// track registers a long-running handler; false when the farm is closing.
func (fm *Farm) track() bool {
	fm.lmu.Lock()
	defer fm.lmu.Unlock()
	if fm.closed {
		return false
	}
	fm.running.Add(1)
	return true
}

// AddFeed adds a feed and returns it. Its items are generated from the
// spec (see Spec.Items) with dates from the farm clock.
func (fm *Farm) AddFeed(spec Spec) *Feed {
	// Reserve the ID, build the feed outside the lock, then make it visible:
	// nobody ever sees a feed without its first snapshot.
	fm.mu.Lock()
	id := len(fm.feeds) + 1
	fm.feeds = append(fm.feeds, nil)
	fm.mu.Unlock()

	f := &Feed{farm: fm, id: id, path: "/f/" + strconv.Itoa(id)}
	f.url = fm.url + f.path
	now := fm.clk.Now()
	var items []Item
	if spec.Items != nil {
		items = slices.Clone(spec.Items)
		for i := range items {
			f.fillItem(&items[i])
		}
	} else if spec.Hostile != HugeItems {
		every := spec.ItemInterval
		if every <= 0 {
			every = 24 * time.Hour
		}
		items = make([]Item, 0, spec.ItemCount)
		for k := spec.ItemCount; k >= 1; k-- {
			items = append(items, f.genItem(k, now.Add(-time.Duration(spec.ItemCount-k)*every), spec.Undated))
		}
		f.nextItem = spec.ItemCount + 1
	}
	if f.nextItem == 0 {
		f.nextItem = len(items) + 1
	}
	f.st.Store(f.build(spec, items, now, nil))

	fm.mu.Lock()
	fm.feeds[id-1] = f
	fm.mu.Unlock()
	return f
}

// Feed returns the feed with the given ID, or nil.
func (fm *Farm) Feed(id int) *Feed {
	fm.mu.RLock()
	defer fm.mu.RUnlock()
	if id < 1 || id > len(fm.feeds) {
		return nil
	}
	return fm.feeds[id-1] // nil while AddFeed is still building it
}

// Feeds returns all feeds in ID order.
func (fm *Farm) Feeds() []*Feed {
	fm.mu.RLock()
	defer fm.mu.RUnlock()
	out := make([]*Feed, 0, len(fm.feeds))
	for _, f := range fm.feeds {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// AddSite adds an HTML page that advertises the given feeds with
// <link rel="alternate" type="..." href="..."> (for autodiscovery) and
// returns its URL (/s/N).
func (fm *Farm) AddSite(feeds ...*Feed) string {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>A site on the feed farm</title>\n")
	for _, f := range feeds {
		st := f.st.Load()
		typ := st.spec.Format.ContentType()
		typ = typ[:strings.IndexByte(typ, ';')]
		fmt.Fprintf(&b, "<link rel=\"alternate\" type=\"%s\" title=\"%s\" href=\"%s\">\n",
			typ, escAttr(st.spec.Title), escAttr(f.url))
	}
	b.WriteString("</head><body><h1>A site on the feed farm</h1><p>Posts are in the feeds.</p></body></html>\n")
	fm.mu.Lock()
	defer fm.mu.Unlock()
	fm.sites = append(fm.sites, b.Bytes())
	return fm.url + "/s/" + strconv.Itoa(len(fm.sites))
}

// OPML returns an OPML 2.0 document listing every feed (also served at /opml).
func (fm *Farm) OPML() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<opml version=\"2.0\">\n<head><title>Feed farm</title></head>\n<body>\n")
	for _, f := range fm.Feeds() {
		st := f.st.Load()
		fmt.Fprintf(&b, "<outline type=\"rss\" text=\"%s\" title=\"%s\" xmlUrl=\"%s\" htmlUrl=\"%s\"/>\n",
			escAttr(st.spec.Title), escAttr(st.spec.Title), escAttr(f.url), escAttr(f.HomeURL()))
	}
	b.WriteString("</body>\n</opml>\n")
	return b.Bytes()
}

// Requests returns a copy of every recorded request, in order of arrival.
func (fm *Farm) Requests() []Record {
	var all []Record
	for _, f := range fm.Feeds() {
		all = append(all, f.Requests()...)
	}
	fm.miscM.Lock()
	all = append(all, fm.misc...)
	fm.miscM.Unlock()
	slices.SortFunc(all, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return all
}

// RequestsFor returns a copy of the requests recorded for feed, in order.
func (fm *Farm) RequestsFor(feed *Feed) []Record { return feed.Requests() }

// Requests returns a copy of the requests recorded for this feed, in order.
func (f *Feed) Requests() []Record {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return slices.Clone(f.log)
}

// Reset forgets every recorded request and the most requests seen in flight.
func (fm *Farm) Reset() {
	fm.maxInFlight.Store(fm.inFlight.Load())
	for _, f := range fm.Feeds() {
		f.lmu.Lock()
		f.log = nil
		f.lmu.Unlock()
	}
	fm.miscM.Lock()
	fm.misc = nil
	fm.miscM.Unlock()
}

// enter counts a feed request in flight and keeps the maximum.
func (fm *Farm) enter() {
	n := fm.inFlight.Add(1)
	for {
		m := fm.maxInFlight.Load()
		if n <= m || fm.maxInFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// MaxInFlight returns the most feed requests the farm was answering at once
// since it started or was last Reset.
func (fm *Farm) MaxInFlight() int { return int(fm.maxInFlight.Load()) }

func (fm *Farm) httpDate(t time.Time) string {
	sec := t.Unix()
	if d := fm.date.Load(); d != nil && d.sec == sec {
		return d.s
	}
	s := t.UTC().Format(http.TimeFormat)
	fm.date.Store(&dateCache{sec: sec, s: s})
	return s
}

func (fm *Farm) newRecord(r *http.Request, feedID int) Record {
	h := r.Header
	return Record{
		Seq:             fm.seq.Add(1),
		Time:            fm.clk.Now(),
		FeedID:          feedID,
		Method:          r.Method,
		Path:            r.URL.Path,
		Query:           r.URL.RawQuery,
		Proto:           r.Proto,
		RemoteAddr:      r.RemoteAddr,
		IfNoneMatch:     h.Get("If-None-Match"),
		IfModifiedSince: h.Get("If-Modified-Since"),
		UserAgent:       h.Get("User-Agent"),
		Accept:          h.Get("Accept"),
		AcceptEncoding:  h.Get("Accept-Encoding"),
		Cookie:          h.Get("Cookie"),
		Referer:         h.Get("Referer"),
	}
}

// ServeHTTP routes /f/N (feeds), /f/N/home and /f/N/i/K (their pages),
// /s/N (sites), /opml and / (an index).
func (fm *Farm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/f/"); ok {
		idStr, sub, _ := strings.Cut(rest, "/")
		if id, err := strconv.Atoi(idStr); err == nil {
			if f := fm.Feed(id); f != nil {
				switch {
				case sub == "":
					f.serve(w, r)
					return
				case sub == "home":
					f.serveHome(w, r)
					return
				case strings.HasPrefix(sub, "i/"):
					f.serveItemPage(w, r, strings.TrimPrefix(sub, "i/"))
					return
				}
			}
		}
	}
	rec := fm.newRecord(r, 0)
	var body []byte
	ctype := "text/html; charset=utf-8"
	switch {
	case p == "/opml":
		body, ctype = fm.OPML(), "text/x-opml; charset=utf-8"
	case strings.HasPrefix(p, "/s/"):
		n, err := strconv.Atoi(strings.TrimPrefix(p, "/s/"))
		fm.mu.RLock()
		if err == nil && n >= 1 && n <= len(fm.sites) {
			body = fm.sites[n-1]
		}
		fm.mu.RUnlock()
	case p == "/":
		body = fm.index()
	}
	rec.Status = http.StatusOK
	if body == nil {
		rec.Status = http.StatusNotFound
		body, ctype = []byte("404 page not found\n"), "text/plain; charset=utf-8"
	}
	fm.miscM.Lock()
	fm.misc = append(fm.misc, rec)
	fm.miscM.Unlock()
	writeSimple(w, fm.httpDate(fm.clk.Now()), rec.Status, ctype, body)
}

func writeSimple(w http.ResponseWriter, date string, status int, ctype string, body []byte) {
	h := w.Header()
	h["Date"] = []string{date}
	h["Content-Type"] = []string{ctype}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (fm *Farm) index() []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Feed farm</title></head><body>\n<h1>Feed farm</h1>\n<p><a href=\"/opml\">OPML of all feeds</a></p>\n<ul>\n")
	for i, f := range fm.Feeds() {
		if i == 1000 {
			b.WriteString("<li>… (see the OPML for the rest)</li>\n")
			break
		}
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a> (%s)</li>\n", escAttr(f.path), esc(f.Spec().Title), f.Spec().Format)
	}
	b.WriteString("</ul></body></html>\n")
	return b.Bytes()
}

func (f *Feed) serveHome(w http.ResponseWriter, r *http.Request) {
	rec := f.farm.newRecord(r, f.id)
	st := f.st.Load()
	typ := st.spec.Format.ContentType()
	typ = typ[:strings.IndexByte(typ, ';')]
	body := []byte("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(st.spec.Title) + "</title>\n" +
		"<link rel=\"alternate\" type=\"" + typ + "\" title=\"" + escAttr(st.spec.Title) + "\" href=\"" + escAttr(f.url) + "\">\n" +
		"</head><body><h1>" + esc(st.spec.Title) + "</h1></body></html>\n")
	rec.Status = http.StatusOK
	f.record(rec)
	writeSimple(w, f.farm.httpDate(rec.Time), rec.Status, "text/html; charset=utf-8", body)
}

func (f *Feed) serveItemPage(w http.ResponseWriter, r *http.Request, k string) {
	rec := f.farm.newRecord(r, f.id)
	rec.Status = http.StatusOK
	f.record(rec)
	body := []byte("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Item " + esc(k) +
		"</title></head><body><p>Item " + esc(k) + " of feed " + strconv.Itoa(f.id) + ".</p></body></html>\n")
	writeSimple(w, f.farm.httpDate(rec.Time), rec.Status, "text/html; charset=utf-8", body)
}

// serve answers a request for the feed document.
func (f *Feed) serve(w http.ResponseWriter, r *http.Request) {
	fm := f.farm
	fm.enter()
	defer fm.inFlight.Add(-1)
	st := f.st.Load()
	spec := &st.spec
	rec := fm.newRecord(r, f.id)
	ctx := r.Context()

	if spec.Latency > 0 || streams(spec.Hostile) {
		if !fm.track() {
			rec.Status = 0
			f.record(rec)
			return
		}
		defer fm.running.Done()
	}
	if spec.Latency > 0 && !wait(ctx, spec.Latency) {
		rec.Status = 0
		f.record(rec)
		return
	}

	now := fm.clk.Now()
	h := w.Header()
	h["Date"] = []string{fm.httpDate(now)}

	switch {
	case spec.Status != 0:
		if spec.RetryAfter != "" {
			h["Retry-After"] = []string{spec.RetryAfter}
		}
		rec.Status = spec.Status
		f.record(rec)
		body := []byte(strconv.Itoa(spec.Status) + " " + http.StatusText(spec.Status) + "\n")
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		w.WriteHeader(spec.Status)
		_, _ = w.Write(body)
		return
	case spec.RedirectTo != "" || spec.Hostile == RedirectLoop:
		code := spec.RedirectStatus
		to := spec.RedirectTo
		if spec.Hostile == RedirectLoop {
			to = f.url
			if code == 0 {
				code = http.StatusFound
			}
		}
		if code == 0 {
			code = http.StatusMovedPermanently
		}
		h["Location"] = []string{to}
		rec.Status = code
		f.record(rec)
		w.WriteHeader(code)
		return
	case streams(spec.Hostile):
		f.serveHostile(w, r, st, rec)
		return
	}

	if st.etag != "" {
		h["Etag"] = []string{st.etag}
	}
	if st.lastModStr != "" {
		h["Last-Modified"] = []string{st.lastModStr}
	}
	if spec.CacheControl != "" {
		h["Cache-Control"] = []string{spec.CacheControl}
	}
	if spec.Expires != 0 {
		h["Expires"] = []string{now.Add(spec.Expires).UTC().Format(http.TimeFormat)}
	}
	if st.link != "" {
		h["Link"] = []string{st.link}
	}
	if spec.Gzip {
		h["Vary"] = []string{"Accept-Encoding"}
	}
	for k, v := range spec.Header {
		h[http.CanonicalHeaderKey(k)] = v
	}

	if st.notModified(rec.IfNoneMatch, rec.IfModifiedSince) {
		rec.Status = http.StatusNotModified
		f.record(rec)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := st.body
	if spec.Gzip && acceptsGzip(rec.AcceptEncoding) {
		body = st.gzipped()
		h["Content-Encoding"] = []string{"gzip"}
	}
	h["Content-Type"] = []string{st.contentType}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rec.Status = http.StatusOK
	f.record(rec)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip is a deliberately simple reading of Accept-Encoding: gzip is
// listed and not with q=0.
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// wait waits d of real time; false when ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func streams(h Hostile) bool {
	switch h {
	case Endless, Trickle, GzipBomb, Reset, LyingLength, HugeItems:
		return true
	}
	return false
}

// endlessLimit stops an Endless body that nobody stops.
const endlessLimit = 1 << 30

func (f *Feed) serveHostile(w http.ResponseWriter, r *http.Request, st *state, rec Record) {
	ctx := r.Context()
	h := w.Header()
	spec := &st.spec
	switch spec.Hostile {
	case Reset:
		rec.Status = 0
		f.record(rec)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST, not FIN
		}
		_ = conn.Close()

	case LyingLength:
		rec.Status = http.StatusOK
		f.record(rec)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			h.Get("Date"), st.contentType, len(st.body)+1000)
		_, _ = bw.Write(st.body)
		_ = bw.Flush()

	case Endless:
		rec.Status = http.StatusOK
		f.record(rec)
		h["Content-Type"] = []string{st.contentType}
		w.WriteHeader(http.StatusOK)
		head := st.body
		if i := bytes.Index(head, []byte("<item>")); i > 0 {
			head = head[:i]
		}
		if _, err := w.Write(head); err != nil {
			return
		}
		chunk := endlessChunk()
		for n := 0; n < endlessLimit && ctx.Err() == nil; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}

	case Trickle:
		rec.Status = http.StatusOK
		f.record(rec)
		h["Content-Type"] = []string{st.contentType}
		h["Content-Length"] = []string{strconv.Itoa(len(st.body))}
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		every := spec.TrickleEvery
		if every <= 0 {
			every = time.Second
		}
		_ = rc.Flush()
		for i := range st.body {
			if !wait(ctx, every) {
				return
			}
			if _, err := w.Write(st.body[i : i+1]); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}

	case GzipBomb:
		rec.Status = http.StatusOK
		f.record(rec)
		member := f.farm.bomb()
		total := spec.BombBytes
		if total <= 0 {
			total = 1 << 30
		}
		h["Content-Type"] = []string{st.contentType}
		h["Content-Encoding"] = []string{"gzip"}
		w.WriteHeader(http.StatusOK)
		for n := int64(0); n < total && ctx.Err() == nil; n += bombMemberSize {
			if _, err := w.Write(member); err != nil {
				return
			}
		}

	case HugeItems:
		rec.Status = http.StatusOK
		f.record(rec)
		h["Content-Type"] = []string{st.contentType}
		w.WriteHeader(http.StatusOK)
		m := docMeta{title: spec.Title, feedURL: f.url, homeURL: f.HomeURL(), updated: st.changed}
		date := st.changed
		_ = streamHuge(ctx, w, spec.Format, m, spec.ItemCount, func(k int) Item {
			return f.genItem(k, date.Add(-time.Duration(spec.ItemCount-k)*time.Minute), spec.Undated)
		})
	}
}

// bombMemberSize is the inflated size of one gzip member of the bomb.
const bombMemberSize = 1 << 20

// bomb returns one gzip member inflating to bombMemberSize zero bytes
// (about 1 KiB). Gzip readers read concatenated members as one stream, so
// repeating it makes a bomb of any size for almost no CPU.
func (fm *Farm) bomb() []byte {
	fm.bombOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(make([]byte, bombMemberSize))
		_ = zw.Close()
		fm.bombMember = b.Bytes()
	})
	return fm.bombMember
}

var (
	endlessOnce sync.Once
	endlessData []byte
)

// endlessChunk is 64 KiB of RSS items, shared read-only by all farms.
func endlessChunk() []byte {
	endlessOnce.Do(func() {
		var b bytes.Buffer
		for i := 0; b.Len() < 64<<10; i++ {
			writeRSSItem(&b, Item{ID: "endless-" + strconv.Itoa(i), Title: "More", Content: "<p>And more.</p>"}, false)
		}
		endlessData = b.Bytes()
	})
	return endlessData
}
