package farm

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serve answers a request for the feed document: with the random fault
// drawn for it (SetFaults), if any; else it waits out the feed's latency,
// then answers with its fixed status, its redirect, its hostile stream or
// the document itself, in that order of precedence.
func (f *Feed) serve(w http.ResponseWriter, r *http.Request) {
	fm := f.farm
	fm.enter()
	defer fm.inFlight.Add(-1)
	st := f.st.Load()
	spec := st.spec()
	rec := fm.newRecord(r, f.id)
	fm.iv.observe(f, rec.Time)
	if f.serveFault(w, r, rec) {
		return
	}

	if spec.Latency > 0 || streams(spec.Hostile) {
		if !fm.track() {
			rec.Status = 0
			f.record(rec)
			return
		}
		defer fm.running.Done()
	}
	if spec.Latency > 0 && !wait(r.Context(), spec.Latency) {
		rec.Status = 0
		f.record(rec)
		return
	}

	now := fm.clk.Now()
	w.Header()["Date"] = fm.httpDate(now)

	switch {
	case spec.Status != 0:
		f.serveStatus(w, spec, rec)
	case spec.RedirectTo != "" || spec.Hostile == RedirectLoop:
		f.serveRedirect(w, spec, rec)
	case streams(spec.Hostile):
		f.serveHostile(w, r, st, rec)
	default:
		f.serveDocument(w, r, st, rec, now)
	}
}

// serveStatus answers the feed's fixed status code (with its Retry-After)
// and a short plain-text body.
func (f *Feed) serveStatus(w http.ResponseWriter, spec *Spec, rec Record) {
	h := w.Header()
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
}

// serveRedirect answers the feed's redirect: to RedirectTo (301 unless
// RedirectStatus says otherwise), or to itself for RedirectLoop (302).
func (f *Feed) serveRedirect(w http.ResponseWriter, spec *Spec, rec Record) {
	code := spec.RedirectStatus
	to := spec.RedirectTo
	if spec.Hostile == RedirectLoop {
		to = f.URL()
		if code == 0 {
			code = http.StatusFound
		}
	}
	if code == 0 {
		code = http.StatusMovedPermanently
	}
	w.Header()["Location"] = []string{to}
	rec.Status = code
	f.record(rec)
	w.WriteHeader(code)
}

// serveDocument answers the feed document with its validators and caching
// headers: 304 when the conditional headers match, else 200 with the body
// rendered afresh (gzipped when the spec and the client allow it).
func (f *Feed) serveDocument(w http.ResponseWriter, r *http.Request, st *state, rec Record, now time.Time) {
	spec := st.spec()
	h := w.Header()
	writeCacheHeaders(h, st, now)
	if st.notModified(rec.IfNoneMatch, rec.IfModifiedSince) {
		rec.Status = http.StatusNotModified
		f.record(rec)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	fm := f.farm
	buf := fm.getBuf()
	defer fm.putBuf(buf)
	f.renderTo(buf, st)
	body := buf.Bytes()
	if spec.Gzip && acceptsGzip(rec.AcceptEncoding) {
		zbuf := fm.getBuf()
		defer fm.putBuf(zbuf)
		fm.gzipTo(zbuf, body)
		body = zbuf.Bytes()
		h["Content-Encoding"] = gzipH
	}
	h["Content-Type"] = st.sh.ctype[:]
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rec.Status = http.StatusOK
	f.record(rec)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// Header values shared by every answer; never modified.
var (
	gzipH = []string{"gzip"}
	varyH = []string{"Accept-Encoding"}
)

// writeCacheHeaders sets the validators, caching headers, WebSub Link,
// Vary and the spec's extra headers of a document answer (200 or 304).
func writeCacheHeaders(h http.Header, st *state, now time.Time) {
	spec := st.spec()
	if v := header(&st.etag); v != nil {
		h["Etag"] = v
	}
	if v := header(&st.lastMod); v != nil {
		h["Last-Modified"] = v
	}
	if v := header(&st.sh.cc); v != nil {
		h["Cache-Control"] = v
	}
	if spec.Expires != 0 {
		h["Expires"] = []string{now.Add(spec.Expires).UTC().Format(http.TimeFormat)}
	}
	if v := header(&st.link); v != nil {
		h["Link"] = v
	}
	if spec.Gzip {
		h["Vary"] = varyH
	}
	for k, v := range spec.Header {
		h[http.CanonicalHeaderKey(k)] = v
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
