package farm

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// AddSite adds an HTML page that advertises the given feeds with
// <link rel="alternate" type="..." href="..."> (for autodiscovery) and
// returns its URL (/s/N).
func (fm *Farm) AddSite(feeds ...*Feed) string {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>A site on the feed farm</title>\n")
	for _, f := range feeds {
		spec := f.Spec()
		typ := spec.Format.ContentType()
		typ = typ[:strings.IndexByte(typ, ';')]
		fmt.Fprintf(&b, "<link rel=\"alternate\" type=\"%s\" title=\"%s\" href=\"%s\">\n",
			typ, escAttr(spec.Title), escAttr(f.URL()))
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
		title := escAttr(f.title(f.st.Load().spec()))
		fmt.Fprintf(&b, "<outline type=\"rss\" text=\"%s\" title=\"%s\" xmlUrl=\"%s\" htmlUrl=\"%s\"/>\n",
			title, title, escAttr(f.URL()), escAttr(f.HomeURL()))
	}
	b.WriteString("</body>\n</opml>\n")
	return b.Bytes()
}

// ServeHTTP routes /f/N (feeds), /f/N/home and /f/N/i/K (their pages),
// /s/N (sites), /opml, / (an index), IntervalsPath and FaultsPath
// (statistics) and the controls added with HandleControl.
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
	if p == IntervalsPath {
		fm.serveIntervals(w)
		return
	}
	if strings.HasPrefix(p, ControlPrefix) && fm.serveControl(w, r) {
		return
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

func writeSimple(w http.ResponseWriter, date []string, status int, ctype string, body []byte) {
	h := w.Header()
	h["Date"] = date
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
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a> (%s)</li>\n", escAttr(f.Path()), esc(f.Spec().Title), f.Spec().Format)
	}
	b.WriteString("</ul></body></html>\n")
	return b.Bytes()
}

func (f *Feed) serveHome(w http.ResponseWriter, r *http.Request) {
	rec := f.farm.newRecord(r, f.id)
	spec := f.Spec()
	typ := spec.Format.ContentType()
	typ = typ[:strings.IndexByte(typ, ';')]
	body := []byte("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(spec.Title) + "</title>\n" +
		"<link rel=\"alternate\" type=\"" + typ + "\" title=\"" + escAttr(spec.Title) + "\" href=\"" + escAttr(f.URL()) + "\">\n" +
		"</head><body><h1>" + esc(spec.Title) + "</h1></body></html>\n")
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

// ControlPrefix starts the paths of the farm's own controls and statistics
// beside its feeds (FaultsPath, HandleControl).
const ControlPrefix = "/_farm/"

// HandleControl serves h at path, which must start with ControlPrefix (a
// control of the program running the farm, such as a switch for its
// publishing). Such requests are neither recorded nor counted.
func (fm *Farm) HandleControl(path string, h http.Handler) {
	if !strings.HasPrefix(path, ControlPrefix) || path == FaultsPath {
		panic(fmt.Sprintf("farm: control path %q not under %s or taken", path, ControlPrefix))
	}
	fm.ctlMu.Lock()
	defer fm.ctlMu.Unlock()
	if fm.ctl == nil {
		fm.ctl = make(map[string]http.Handler)
	}
	fm.ctl[path] = h
}

// serveControl answers FaultsPath or a path given to HandleControl; false
// for any other path.
func (fm *Farm) serveControl(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == FaultsPath {
		fm.serveFaultCounts(w)
		return true
	}
	fm.ctlMu.RLock()
	h := fm.ctl[r.URL.Path]
	fm.ctlMu.RUnlock()
	if h == nil {
		return false
	}
	h.ServeHTTP(w, r)
	return true
}
