package farm

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// streams reports whether a hostile mode answers with its own stream
// (serveHostile) rather than a redirect or the normal document.
func streams(h Hostile) bool {
	switch h {
	case Endless, Trickle, GzipBomb, Reset, LyingLength, HugeItems:
		return true
	}
	return false
}

// endlessLimit stops an Endless body that nobody stops.
const endlessLimit = 1 << 30

// serveHostile answers with the feed's hostile stream; each mode is one
// step below. The request is recorded before anything is written.
func (f *Feed) serveHostile(w http.ResponseWriter, r *http.Request, st *state, rec Record) {
	ctx := r.Context()
	rec.Status = http.StatusOK
	if st.spec().Hostile == Reset {
		rec.Status = 0
	}
	f.record(rec)
	switch st.spec().Hostile {
	case Reset:
		hostileReset(w)
	case LyingLength:
		hostileLyingLength(w, st, f.render(st))
	case Endless:
		hostileEndless(ctx, w, st, f.render(st))
	case Trickle:
		hostileTrickle(ctx, w, st, f.render(st))
	case GzipBomb:
		f.hostileGzipBomb(ctx, w, st)
	case HugeItems:
		f.hostileHugeItems(ctx, w, st)
	}
}

// hostileReset closes the connection with a TCP RST before any answer.
func hostileReset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
	_ = conn.Close()
}

// hostileLyingLength answers 200 with a Content-Length 1000 bytes longer
// than the body it sends before closing the connection.
func hostileLyingLength(w http.ResponseWriter, st *state, body []byte) {
	date := w.Header().Get("Date")
	conn, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		date, st.contentType(), len(body)+1000)
	_, _ = bw.Write(body)
	_ = bw.Flush()
}

// hostileEndless sends the document's head and then RSS items until the
// client goes away (or endlessLimit bytes).
func hostileEndless(ctx context.Context, w http.ResponseWriter, st *state, body []byte) {
	w.Header()["Content-Type"] = st.sh.ctype[:]
	w.WriteHeader(http.StatusOK)
	head := body
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
}

// hostileTrickle sends the document one byte every TrickleEvery (default
// one second of real time), flushing each.
func hostileTrickle(ctx context.Context, w http.ResponseWriter, st *state, body []byte) {
	h := w.Header()
	h["Content-Type"] = st.sh.ctype[:]
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	every := st.spec().TrickleEvery
	if every <= 0 {
		every = time.Second
	}
	_ = rc.Flush()
	for i := range body {
		if !wait(ctx, every) {
			return
		}
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// hostileGzipBomb sends BombBytes (default 1 GiB) of inflated zeros as
// repeated gzip members.
func (f *Feed) hostileGzipBomb(ctx context.Context, w http.ResponseWriter, st *state) {
	h := w.Header()
	member := f.farm.bomb()
	total := st.spec().BombBytes
	if total <= 0 {
		total = 1 << 30
	}
	h["Content-Type"] = st.sh.ctype[:]
	h["Content-Encoding"] = gzipH
	w.WriteHeader(http.StatusOK)
	for n := int64(0); n < total && ctx.Err() == nil; n += bombMemberSize {
		if _, err := w.Write(member); err != nil {
			return
		}
	}
}

// hostileHugeItems streams a document of ItemCount generated items, a
// minute apart, without ever holding it in memory.
func (f *Feed) hostileHugeItems(ctx context.Context, w http.ResponseWriter, st *state) {
	spec := st.spec()
	w.Header()["Content-Type"] = st.sh.ctype[:]
	w.WriteHeader(http.StatusOK)
	m := docMeta{title: f.title(spec), feedURL: f.URL(), homeURL: f.HomeURL(), updated: st.changed}
	date := st.changed
	_ = streamHuge(ctx, w, spec.Format, m, spec.ItemCount, func(k int) Item {
		return f.genItem(k, date.Add(-time.Duration(spec.ItemCount-k)*time.Minute), spec.Undated)
	})
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
