package farm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/mmcdole/gofeed"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFarm(t *testing.T) (*Farm, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	fm := New(clk)
	t.Cleanup(fm.Close)
	return fm, clk
}

// client never asks for compression by itself and keeps no cookies.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableCompression: true, Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = []string{v}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, body
}

func TestConditional(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	strong := fm.AddFeed(Spec{ItemCount: 3, ETag: ETagStrong, LastModified: true})
	weak := fm.AddFeed(Spec{ItemCount: 3, ETag: ETagWeak})
	lmOnly := fm.AddFeed(Spec{ItemCount: 3, LastModified: true})
	none := fm.AddFeed(Spec{ItemCount: 3})

	st := strong.ETag()
	opaqueStrong := strings.TrimPrefix(st, "W/")
	if !strings.HasPrefix(st, `"`) || !strings.HasPrefix(weak.ETag(), `W/"`) {
		t.Fatalf("ETags: strong %q weak %q", st, weak.ETag())
	}
	lm := lmOnly.LastModified()
	lmTime, err := http.ParseTime(lm)
	if err != nil || !lmTime.Equal(t0) {
		t.Fatalf("Last-Modified %q (%v), want the farm clock %v", lm, err, t0)
	}

	tests := []struct {
		name string
		feed *Feed
		hdr  map[string]string
		want int
	}{
		{"strong etag exact", strong, map[string]string{"If-None-Match": st}, 304},
		{"strong etag sent weak", strong, map[string]string{"If-None-Match": "W/" + opaqueStrong}, 304},
		{"weak etag exact", weak, map[string]string{"If-None-Match": weak.ETag()}, 304},
		{"weak etag sent strong", weak, map[string]string{"If-None-Match": strings.TrimPrefix(weak.ETag(), "W/")}, 304},
		{"etag in a list", strong, map[string]string{"If-None-Match": `"nope", ` + st + `, "other"`}, 304},
		{"star", strong, map[string]string{"If-None-Match": "*"}, 304},
		{"etag mismatch", strong, map[string]string{"If-None-Match": `"nope"`}, 200},
		{"INM mismatch wins over matching IMS", strong, map[string]string{"If-None-Match": `"nope"`, "If-Modified-Since": strong.LastModified()}, 200},
		{"INM to feed without etag", lmOnly, map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": lm}, 200},
		{"IMS equal", lmOnly, map[string]string{"If-Modified-Since": lm}, 304},
		{"IMS after", lmOnly, map[string]string{"If-Modified-Since": t0.Add(time.Hour).Format(http.TimeFormat)}, 304},
		{"IMS before", lmOnly, map[string]string{"If-Modified-Since": t0.Add(-time.Second).Format(http.TimeFormat)}, 200},
		{"IMS RFC 850 form equal", lmOnly, map[string]string{"If-Modified-Since": t0.Format(time.RFC850)}, 304},
		{"IMS garbage", lmOnly, map[string]string{"If-Modified-Since": "yesterday-ish"}, 200},
		{"no validators", strong, nil, 200},
		{"feed without validators", none, map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": lm}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, c, tt.feed.URL(), tt.hdr)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 304 && len(body) != 0 {
				t.Errorf("304 with a body of %d bytes", len(body))
			}
			if got := resp.Header.Get("ETag"); got != tt.feed.ETag() {
				t.Errorf("ETag %q, want %q (also on 304)", got, tt.feed.ETag())
			}
			if got := resp.Header.Get("Last-Modified"); got != tt.feed.LastModified() {
				t.Errorf("Last-Modified %q, want %q", got, tt.feed.LastModified())
			}
		})
	}
}

func TestPublishChangesValidators(t *testing.T) {
	fm, clk := newFarm(t)
	c := newClient(t)
	f := fm.AddFeed(Spec{ItemCount: 2, ETag: ETagStrong, LastModified: true, Format: Atom})
	oldTag, oldLM := f.ETag(), f.LastModified()

	clk.Advance(10 * time.Minute)
	f.Publish()
	if f.ETag() == oldTag || f.LastModified() == oldLM {
		t.Fatalf("Publish kept validators: %q %q", f.ETag(), f.LastModified())
	}
	if want := t0.Add(10 * time.Minute).Format(http.TimeFormat); f.LastModified() != want {
		t.Errorf("Last-Modified %q, want the farm time of the publish %q", f.LastModified(), want)
	}
	if n := len(f.Items()); n != 3 {
		t.Fatalf("%d items after Publish, want 3", n)
	}
	resp, body := get(t, c, f.URL(), map[string]string{"If-None-Match": oldTag})
	if resp.StatusCode != 200 || !bytes.Equal(body, f.Body()) {
		t.Fatalf("old ETag: status %d, want 200 with the new body", resp.StatusCode)
	}
	if resp, _ := get(t, c, f.URL(), map[string]string{"If-Modified-Since": oldLM}); resp.StatusCode != 200 {
		t.Fatalf("old Last-Modified: status %d, want 200", resp.StatusCode)
	}
	if resp, _ := get(t, c, f.URL(), map[string]string{"If-None-Match": f.ETag()}); resp.StatusCode != 304 {
		t.Fatalf("new ETag: status %d, want 304", resp.StatusCode)
	}

	parsed, err := gofeed.NewParser().ParseString(string(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Items) != 3 || parsed.Items[0].PublishedParsed == nil ||
		!parsed.Items[0].PublishedParsed.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("newest item: %+v", parsed.Items[0])
	}

	// Explicit items, one without a date.
	f.Publish(Item{ID: "x1", Title: "Dated", Published: clk.Now()}, Item{ID: "x2", Title: "Undated"})
	it := f.Items()
	if it[0].ID != "x1" || it[1].ID != "x2" || !it[1].Published.IsZero() {
		t.Fatalf("items after Publish: %+v", it[:2])
	}

	// SetSpec that does not change the document keeps the validators.
	tag := f.ETag()
	spec := f.Spec()
	spec.CacheControl = "max-age=60"
	f.SetSpec(spec)
	if f.ETag() != tag {
		t.Errorf("SetSpec of a header changed the ETag")
	}
	spec.Title = "Renamed"
	clk.Advance(time.Minute)
	f.SetSpec(spec)
	if f.ETag() == tag {
		t.Errorf("SetSpec of the title kept the ETag")
	}
}

func TestMaxItems(t *testing.T) {
	fm, _ := newFarm(t)
	f := fm.AddFeed(Spec{ItemCount: 5, MaxItems: 5})
	f.Publish()
	f.Publish()
	items := f.Items()
	if len(items) != 5 || items[0].ID != "farm:f1:i7" {
		t.Fatalf("items %d, first %q", len(items), items[0].ID)
	}
}

func TestFormatsParse(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	hub := "http://hub.example/"
	tests := []struct {
		name     string
		spec     Spec
		ctype    string
		wantHub  bool
		wantLink bool
	}{
		{"rss", Spec{Format: RSS, ItemCount: 4}, "application/rss+xml; charset=utf-8", false, false},
		{"atom", Spec{Format: Atom, ItemCount: 4}, "application/atom+xml; charset=utf-8", false, false},
		{"json", Spec{Format: JSONFeed, ItemCount: 4}, "application/feed+json; charset=utf-8", false, false},
		{"rss hub both", Spec{Format: RSS, ItemCount: 4, Hub: hub}, "", true, true},
		{"atom hub in feed", Spec{Format: Atom, ItemCount: 4, Hub: hub, HubPlacement: HubInFeed}, "", true, false},
		{"json hub header", Spec{Format: JSONFeed, ItemCount: 4, Hub: hub, HubPlacement: HubHeader}, "", false, true},
		{"undated", Spec{Format: RSS, ItemCount: 4, Undated: true}, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fm.AddFeed(tt.spec)
			resp, body := get(t, c, f.URL(), nil)
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			p, err := gofeed.NewParser().ParseString(string(body))
			if err != nil {
				t.Fatalf("gofeed: %v\n%s", err, body)
			}
			if len(p.Items) != 4 {
				t.Fatalf("%d items, want 4", len(p.Items))
			}
			for i, it := range p.Items {
				if tt.spec.Undated != (it.PublishedParsed == nil) {
					t.Errorf("item %d date %v, undated=%v", i, it.PublishedParsed, tt.spec.Undated)
				}
				if !tt.spec.Undated && !it.PublishedParsed.Equal(t0.Add(-time.Duration(i)*24*time.Hour)) {
					t.Errorf("item %d published %v", i, it.PublishedParsed)
				}
				if it.GUID == "" || it.Link == "" {
					t.Errorf("item %d without id or link: %+v", i, it)
				}
			}
			if got := bytes.Contains(body, []byte(hub)); got != tt.wantHub {
				t.Errorf("hub in document: %v, want %v", got, tt.wantHub)
			}
			link := resp.Header.Get("Link")
			if got := strings.Contains(link, `<`+hub+`>; rel="hub"`); got != tt.wantLink {
				t.Errorf("Link header %q: hub %v, want %v", link, got, tt.wantLink)
			}
			if tt.wantLink && !strings.Contains(link, `<`+f.URL()+`>; rel="self"`) {
				t.Errorf("Link header %q without self", link)
			}
		})
	}
}

func TestHeadersFromFarmClock(t *testing.T) {
	fm, clk := newFarm(t)
	c := newClient(t)
	f := fm.AddFeed(Spec{ItemCount: 1, CacheControl: "max-age=900", Expires: 30 * time.Minute,
		Header: http.Header{"Age": {"100"}}})
	clk.Advance(time.Hour)
	resp, _ := get(t, c, f.URL(), nil)
	now := t0.Add(time.Hour)
	checks := map[string]string{
		"Date":          now.Format(http.TimeFormat),
		"Expires":       now.Add(30 * time.Minute).Format(http.TimeFormat),
		"Cache-Control": "max-age=900",
		"Age":           "100",
		"ETag":          "",
		"Last-Modified": "",
	}
	for k, want := range checks {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	recs := fm.RequestsFor(f)
	if len(recs) != 1 || !recs[0].Time.Equal(now) {
		t.Fatalf("records %+v, want one at %v", recs, now)
	}
}

func TestStatusAndRedirect(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	target := fm.AddFeed(Spec{ItemCount: 1})
	tests := []struct {
		name       string
		spec       Spec
		status     int
		retryAfter string
		location   string
	}{
		{"404", Spec{Status: 404}, 404, "", ""},
		{"410", Spec{Status: 410}, 410, "", ""},
		{"429 retry-after seconds", Spec{Status: 429, RetryAfter: "120"}, 429, "120", ""},
		{"503 retry-after date", Spec{Status: 503, RetryAfter: "Sun, 01 Mar 2026 14:00:00 GMT"}, 503, "Sun, 01 Mar 2026 14:00:00 GMT", ""},
		{"500", Spec{Status: 500}, 500, "", ""},
		{"403", Spec{Status: 403}, 403, "", ""},
		{"301 default", Spec{RedirectTo: target.URL()}, 301, "", target.URL()},
		{"302", Spec{RedirectTo: target.URL(), RedirectStatus: 302}, 302, "", target.URL()},
		{"307", Spec{RedirectTo: target.URL(), RedirectStatus: 307}, 307, "", target.URL()},
		{"308", Spec{RedirectTo: target.URL(), RedirectStatus: 308}, 308, "", target.URL()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fm.AddFeed(tt.spec)
			resp, _ := get(t, c, f.URL(), nil)
			if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter ||
				resp.Header.Get("Location") != tt.location {
				t.Fatalf("got %d Retry-After %q Location %q", resp.StatusCode,
					resp.Header.Get("Retry-After"), resp.Header.Get("Location"))
			}
		})
	}

	loop := fm.AddFeed(Spec{Hostile: RedirectLoop})
	resp, _ := get(t, c, loop.URL(), nil)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != loop.URL() {
		t.Fatalf("loop: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	// SetStatus at run time, and back.
	f := fm.AddFeed(Spec{ItemCount: 1, ETag: ETagStrong})
	f.SetStatus(http.StatusGone)
	if resp, _ := get(t, c, f.URL(), nil); resp.StatusCode != 410 {
		t.Fatalf("after SetStatus(410): %d", resp.StatusCode)
	}
	f.SetStatus(0)
	if resp, _ := get(t, c, f.URL(), map[string]string{"If-None-Match": f.ETag()}); resp.StatusCode != 304 {
		t.Fatalf("after SetStatus(0): %d", resp.StatusCode)
	}
}

func TestRecording(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	a := fm.AddFeed(Spec{ItemCount: 1, ETag: ETagWeak})
	b := fm.AddFeed(Spec{ItemCount: 1})
	hdr := map[string]string{
		"If-None-Match": a.ETag(), "If-Modified-Since": "Sat, 28 Feb 2026 00:00:00 GMT",
		"User-Agent": "test/1", "Accept": "application/rss+xml", "Accept-Encoding": "gzip",
		"Cookie": "a=b", "Referer": "http://elsewhere/",
	}
	get(t, c, a.URL(), hdr)
	get(t, c, b.URL()+"?x=1", nil)
	get(t, c, fm.URL()+"/nothing-here", nil)

	all := fm.Requests()
	if len(all) != 3 {
		t.Fatalf("%d records, want 3", len(all))
	}
	want := Record{
		Seq: 1, Time: t0, FeedID: a.ID(), Method: "GET", Path: a.Path(), Proto: "HTTP/1.1",
		IfNoneMatch: a.ETag(), IfModifiedSince: hdr["If-Modified-Since"], UserAgent: "test/1",
		Accept: "application/rss+xml", AcceptEncoding: "gzip", Cookie: "a=b", Referer: "http://elsewhere/",
		Status: 304,
	}
	got := all[0]
	got.RemoteAddr = ""
	if got != want {
		t.Errorf("record\n got %+v\nwant %+v", got, want)
	}
	if all[1].FeedID != b.ID() || all[1].Query != "x=1" || all[1].Status != 200 || all[1].Seq != 2 {
		t.Errorf("second record %+v", all[1])
	}
	if all[2].FeedID != 0 || all[2].Status != 404 {
		t.Errorf("third record %+v", all[2])
	}
	if r := fm.RequestsFor(b); len(r) != 1 || r[0].Path != b.Path() {
		t.Errorf("RequestsFor(b) = %+v", r)
	}
	fm.Reset()
	if n := len(fm.Requests()); n != 0 {
		t.Fatalf("%d records after Reset", n)
	}
}

func TestConcurrentRecording(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	feeds := make([]*Feed, 20)
	for i := range feeds {
		feeds[i] = fm.AddFeed(Spec{ItemCount: 1, ETag: ETagStrong})
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				f := feeds[(w+i)%len(feeds)]
				if w%2 == 0 {
					f.Publish()
				}
				get(t, c, f.URL(), map[string]string{"If-None-Match": f.ETag()})
			}
		})
	}
	wg.Wait()
	all := fm.Requests()
	if len(all) != 200 {
		t.Fatalf("%d records, want 200", len(all))
	}
	for i, r := range all {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has Seq %d", i, r.Seq)
		}
	}
}

func TestGzip(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	on := fm.AddFeed(Spec{ItemCount: 5, Gzip: true})
	off := fm.AddFeed(Spec{ItemCount: 5})
	tests := []struct {
		name     string
		feed     *Feed
		ae       string
		wantGzip bool
	}{
		{"on, accepted", on, "gzip, br", true},
		{"on, q=0", on, "gzip;q=0, br", false},
		{"on, not asked", on, "", false},
		{"off, asked", off, "gzip", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.ae != "" {
				hdr["Accept-Encoding"] = tt.ae
			}
			resp, body := get(t, c, tt.feed.URL(), hdr)
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tt.wantGzip {
				t.Fatalf("gzip %v, want %v", got, tt.wantGzip)
			}
			if tt.wantGzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, tt.feed.Body()) {
				t.Fatalf("body differs from the feed's")
			}
		})
	}
}

func TestSitesAndOPML(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	a := fm.AddFeed(Spec{Title: "A & B", Format: RSS})
	b := fm.AddFeed(Spec{Format: Atom})
	site := fm.AddSite(a, b)
	_, page := get(t, c, site, nil)
	for _, want := range []string{
		`<link rel="alternate" type="application/rss+xml" title="A &amp; B" href="` + a.URL() + `">`,
		`<link rel="alternate" type="application/atom+xml" title="Feed 2" href="` + b.URL() + `">`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("site page lacks %s\n%s", want, page)
		}
	}
	_, home := get(t, c, a.HomeURL(), nil)
	if !bytes.Contains(home, []byte(`href="`+a.URL()+`"`)) {
		t.Errorf("home page lacks the feed link:\n%s", home)
	}
	resp, opml := get(t, c, fm.URL()+"/opml", nil)
	if resp.StatusCode != 200 || bytes.Count(opml, []byte("<outline ")) != 2 ||
		!bytes.Contains(opml, []byte(`xmlUrl="`+b.URL()+`"`)) {
		t.Errorf("OPML (%d):\n%s", resp.StatusCode, opml)
	}
}

func TestHostile(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)

	t.Run("reset", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: Reset})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL(), nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("got %d, want a connection error", resp.StatusCode)
		}
		if r := fm.RequestsFor(f); len(r) != 1 || r[0].Status != 0 {
			t.Fatalf("records %+v", r)
		}
	})
	t.Run("lying content-length", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: LyingLength, ItemCount: 2})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.ContentLength != int64(len(f.Body())+1000) {
			t.Errorf("Content-Length %d, body %d", resp.ContentLength, len(f.Body()))
		}
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read error %v, want unexpected EOF", err)
		}
	})
	t.Run("endless", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: Endless, ItemCount: 1})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.CopyN(io.Discard, resp.Body, 5<<20)
		resp.Body.Close()
		if err != nil || n != 5<<20 {
			t.Fatalf("read %d bytes: %v", n, err)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: Trickle, TrickleEvery: time.Millisecond, Title: "t"})
		start := time.Now()
		_, body := get(t, c, f.URL(), nil)
		if !bytes.Equal(body, f.Body()) {
			t.Fatalf("trickled body differs")
		}
		if min := time.Duration(len(body)) * time.Millisecond; time.Since(start) < min {
			t.Fatalf("%d bytes in %v: not trickled", len(body), time.Since(start))
		}
	})
	t.Run("gzip bomb", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: GzipBomb, BombBytes: 16 << 20})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		cr := &countReader{r: resp.Body}
		zr, err := gzip.NewReader(cr)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, zr)
		if err != nil || n != 16<<20 {
			t.Fatalf("inflated %d bytes: %v", n, err)
		}
		if cr.n > 256<<10 {
			t.Errorf("%d bytes on the wire for 16 MiB: not much of a bomb", cr.n)
		}
	})
	t.Run("html page", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: HTMLPage, ItemCount: 2})
		resp, body := get(t, c, f.URL(), nil)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.HasPrefix(body, []byte("<!DOCTYPE html>")) {
			t.Fatalf("%s:\n%s", resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("invalid utf-8", func(t *testing.T) {
		for _, format := range []Format{RSS, Atom, JSONFeed} {
			f := fm.AddFeed(Spec{Hostile: InvalidUTF8, ItemCount: 2, Format: format})
			_, body := get(t, c, f.URL(), nil)
			if utf8.Valid(body) {
				t.Errorf("%s: body is valid UTF-8", format)
			}
		}
	})
	t.Run("entity bomb", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: EntityBomb, Format: Atom})
		_, body := get(t, c, f.URL(), nil)
		if !bytes.Contains(body, []byte("<!ENTITY lol9")) || !bytes.Contains(body, []byte("<title>&lol9;</title>")) {
			t.Fatalf("no entity bomb:\n%s", body)
		}
	})
	t.Run("huge items streamed", func(t *testing.T) {
		const n = 10000
		for _, format := range []Format{RSS, Atom, JSONFeed} {
			f := fm.AddFeed(Spec{Hostile: HugeItems, ItemCount: n, Format: format})
			req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL(), nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			count := 0
			sc := bufio.NewScanner(resp.Body)
			marker := map[Format]string{RSS: "<item>", Atom: "<entry>", JSONFeed: `{"id":`}[format]
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), marker) {
					count++
				}
			}
			resp.Body.Close()
			if sc.Err() != nil || count != n {
				t.Fatalf("%s: %d items (%v), want %d", format, count, sc.Err(), n)
			}
		}
	})
	t.Run("huge items parse", func(t *testing.T) {
		f := fm.AddFeed(Spec{Hostile: HugeItems, ItemCount: 300, Format: JSONFeed})
		_, body := get(t, c, f.URL(), nil)
		p, err := gofeed.NewParser().ParseString(string(body))
		if err != nil || len(p.Items) != 300 {
			t.Fatalf("parse: %v", err)
		}
	})
	t.Run("latency", func(t *testing.T) {
		f := fm.AddFeed(Spec{Latency: 50 * time.Millisecond})
		start := time.Now()
		get(t, c, f.URL(), nil)
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("answered in %v", d)
		}
	})
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestCloseEndsLongHandlers(t *testing.T) {
	clk := clock.NewFake(t0)
	fm := New(clk)
	f := fm.AddFeed(Spec{Hostile: Trickle, TrickleEvery: time.Hour, ItemCount: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", f.URL(), nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(fm.RequestsFor(f)) > 0 }, "request never arrived")
	fm.Close() // must not wait an hour
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("trickle finished without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("client still reading after Close")
	}
}

func TestManyFeedsAreCheap(t *testing.T) {
	fm, _ := newFarm(t)
	start := time.Now()
	for range 5000 {
		fm.AddFeed(Spec{ItemCount: 3, ETag: ETagStrong, LastModified: true})
	}
	if n := len(fm.Feeds()); n != 5000 {
		t.Fatalf("%d feeds", n)
	}
	t.Logf("5,000 feeds added in %v", time.Since(start))
	if fm.Feed(5000).Path() != "/f/5000" || fm.Feed(5001) != nil || fm.Feed(0) != nil {
		t.Fatal("Feed lookup")
	}
	// Feeds with equal specs share one, also when a few specs take turns
	// after many different ones.
	for i := range 20 {
		fm.AddFeed(Spec{Title: "Distinct " + strconv.Itoa(i)})
	}
	for i := range 300 {
		fm.AddFeed(Spec{Format: Format(i % 3), ItemCount: 3, CacheControl: "max-age=300"})
	}
	shared := map[*shared]bool{}
	for _, f := range fm.Feeds() {
		shared[f.st.Load().sh] = true
	}
	if len(shared) != 1+20+3 {
		t.Errorf("%d specs kept for 5,320 feeds of %d different specs", len(shared), 1+20+3)
	}
}

func TestETagMatch(t *testing.T) {
	tests := []struct {
		list, tag string
		want      bool
	}{
		{`"a"`, `"a"`, true},
		{`W/"a"`, `"a"`, true},
		{`"a"`, `W/"a"`, true},
		{`"b", W/"a"`, `"a"`, true},
		{`"b","c"`, `"a"`, false},
		{`"a,b"`, `"a,b"`, true},
		{`*`, `"a"`, true},
		{`"a`, `"a"`, false},
		{``, `"a"`, false},
		{`  ,  "a"`, `"a"`, true},
	}
	for _, tt := range tests {
		if got := etagMatch(tt.list, tt.tag); got != tt.want {
			t.Errorf("etagMatch(%q, %q) = %v, want %v", tt.list, tt.tag, got, tt.want)
		}
	}
}

func TestAddFeedWhileServing(t *testing.T) {
	fm, _ := newFarm(t)
	c := newClient(t)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 300 {
			fm.AddFeed(Spec{ItemCount: 2, ETag: ETagStrong})
		}
	})
	wg.Go(func() {
		for i := range 300 {
			_ = fm.OPML()
			_ = fm.Requests()
			resp, _ := get(t, c, fm.URL()+"/f/"+strconv.Itoa(i+1), nil)
			if resp.StatusCode != 200 && resp.StatusCode != 404 {
				t.Errorf("/f/%d: %d", i+1, resp.StatusCode)
			}
		}
	})
	wg.Wait()
	if n := len(fm.Feeds()); n != 300 {
		t.Fatalf("%d feeds", n)
	}
}
