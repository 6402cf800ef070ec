// Package farm is a fake feed host for tests, simulations and benchmarks:
// thousands of feeds on one loopback listener, each with its own formats,
// validators, caching headers, status codes, redirects, WebSub hubs and
// hostile behaviours, all switchable at run time, and a record of every
// request it received so tests can check what a publisher would see in
// their logs. For fault runs it fails requests at random from a seed
// (SetFaults) and logs every item it publishes (SetPublishLog).
//
// Times in Date, Last-Modified and Expires, and in the request records, come
// from the farm's clock, so a simulation can drive it with a fake clock.
// Latency and the Trickle mode are real time: they exist to exercise
// network timeouts.
//
// The request path is built to be cheap at a hundred thousand feeds a
// process: every feed keeps an immutable snapshot (its items as numbers,
// validators and header values) that is swapped atomically when it
// changes, and its own request log behind its own mutex, so requests for
// different feeds share no lock. A 304 allocates nothing in the farm; a
// 200 renders the body again (the same bytes) with pooled buffers and
// gzip writers instead of keeping a body per feed.
//
// Test infrastructure: never linked into cmd/feedmail.
// It never reaches a host but its own listener.
package farm

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
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

	// noRecord turns the request records off (SetRecording).
	noRecord atomic.Bool

	faults atomic.Pointer[faultDice] // nil: no random faults (SetFaults)
	pub    publog                    // the publication log (SetPublishLog)
	ctlMu  sync.RWMutex              // guards controls
	ctl    map[string]http.Handler   // extra paths under ControlPrefix (HandleControl)

	iv    *intervals // time between requests for the same feed
	smu   sync.Mutex // guards specs
	specs []*shared  // the latest specs interned, up to cap
	bufs  sync.Pool  // *bytes.Buffer for rendering bodies
	gzips sync.Pool  // *gzip.Writer at BestSpeed
}

type dateCache struct {
	sec int64
	h   []string // the Date header value (never modified)
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
	f := &Farm{clk: clk, ln: ln, url: "http://" + ln.Addr().String(), iv: newIntervals(),
		specs: make([]*shared, 0, 8)}
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

	f := &Feed{farm: fm, id: id}
	now := fm.clk.Now()
	var items []item
	var kept []Item
	if spec.Items != nil {
		items, kept = f.keep(make([]item, 0, len(spec.Items)), nil, spec.Items)
	} else if spec.Hostile != HugeItems {
		every := spec.ItemInterval
		if every <= 0 {
			every = 24 * time.Hour
		}
		items = make([]item, 0, spec.ItemCount)
		for k := spec.ItemCount; k >= 1; k-- {
			items = append(items, genRef(k, now.Add(-time.Duration(spec.ItemCount-k)*every), spec.Undated))
		}
		f.nextItem = spec.ItemCount + 1
	}
	if f.nextItem == 0 {
		f.nextItem = len(items) + 1
	}
	f.st.Store(f.build(fm.intern(spec), items, kept, now, nil))

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

// SetRecording turns the record of requests on (the default) or off. A
// farm serving a long benchmark turns it off so its memory stays flat;
// Requests then returns what was recorded before.
func (fm *Farm) SetRecording(on bool) { fm.noRecord.Store(!on) }

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

// httpDate returns t as a Date header value, formatted once a second.
func (fm *Farm) httpDate(t time.Time) []string {
	sec := t.Unix()
	if d := fm.date.Load(); d != nil && d.sec == sec {
		return d.h
	}
	h := []string{t.UTC().Format(http.TimeFormat)}
	fm.date.Store(&dateCache{sec: sec, h: h})
	return h
}

// getBuf returns an empty buffer from the farm's pool; putBuf gives it back.
func (fm *Farm) getBuf() *bytes.Buffer {
	if b, ok := fm.bufs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (fm *Farm) putBuf(b *bytes.Buffer) {
	if b.Cap() > 1<<20 {
		return // a huge document's: let it go
	}
	b.Reset()
	fm.bufs.Put(b)
}

// gzipTo appends the gzip encoding of body (best speed) to dst, with a
// pooled compressor: a new one costs far more than the compression.
func (fm *Farm) gzipTo(dst *bytes.Buffer, body []byte) {
	zw, ok := fm.gzips.Get().(*gzip.Writer)
	if ok {
		zw.Reset(dst)
	} else {
		zw, _ = gzip.NewWriterLevel(dst, gzip.BestSpeed)
	}
	_, _ = zw.Write(body)
	_ = zw.Close()
	zw.Reset(nil)
	fm.gzips.Put(zw)
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
