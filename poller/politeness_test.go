package poller_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// simCat is one kind of feed in the politeness simulation.
type simCat struct {
	name  string
	n     int
	host  int // 0: main farm (127.0.0.1); 1: the rate-limiting host (127.0.0.2); 2: the slow host (127.0.0.3)
	spec  farm.Spec
	okGap time.Duration // the least time after a 200 or 304 before the next request
	// extra subscribers (instant) beyond the first; digest adds one digest
	// subscriber.
	extra  int
	digest bool
	// validators: the feed sends an ETag or Last-Modified on 200/304.
	validators bool
	// publishEvery: publish a new post this often.
	publishEvery time.Duration
	// recoverAt: the feed serves normally from t0+recoverAt on.
	recoverAt time.Duration
}

// errGap is the least time before the next request after an error status.
var errGap = map[int]time.Duration{
	http.StatusNotFound:            24 * time.Hour,
	http.StatusInternalServerError: 4 * time.Hour,
	http.StatusForbidden:           4 * time.Hour,
	http.StatusTooManyRequests:     2 * time.Hour, // Retry-After: 7200
}

func simCats() []simCat {
	h := func(k string, v string) http.Header { return http.Header{k: {v}} }
	return []simCat{
		{name: "etag+lm, fast", n: 10, spec: farm.Spec{ETag: farm.ETagStrong, LastModified: true, ItemCount: 5}, okGap: 5 * time.Minute, validators: true},
		{name: "weak etag, gzip", n: 10, spec: farm.Spec{ETag: farm.ETagWeak, Gzip: true, Format: farm.Atom}, okGap: 5 * time.Minute, validators: true},
		{name: "last-modified only", n: 10, spec: farm.Spec{LastModified: true, Format: farm.JSONFeed}, okGap: 5 * time.Minute, validators: true},
		{name: "no validators", n: 30, spec: farm.Spec{}, okGap: 15 * time.Minute},
		{name: "max-age=3600", n: 150, spec: farm.Spec{ETag: farm.ETagStrong, CacheControl: "public, max-age=3600", ItemCount: 2}, okGap: time.Hour, validators: true},
		{name: "max-age=7200, Age 1800", n: 100, spec: farm.Spec{LastModified: true, CacheControl: "max-age=7200", Header: h("Age", "1800")}, okGap: 90 * time.Minute, validators: true},
		{name: "Expires in 3 h", n: 100, spec: farm.Spec{ETag: farm.ETagStrong, Expires: 3 * time.Hour}, okGap: 3 * time.Hour, validators: true},
		{name: "max-age=2 days (capped)", n: 150, spec: farm.Spec{ETag: farm.ETagStrong, CacheControl: "max-age=172800"}, okGap: 24 * time.Hour, validators: true},
		{name: "4 subscribers", n: 60, spec: farm.Spec{ETag: farm.ETagStrong, LastModified: true, CacheControl: "max-age=3600"}, okGap: time.Hour, extra: 2, digest: true, validators: true},
		{name: "publishes every 2 h", n: 20, spec: farm.Spec{ETag: farm.ETagStrong, LastModified: true, CacheControl: "max-age=1800", ItemCount: 3, ItemInterval: 2 * time.Hour}, okGap: 30 * time.Minute, digest: true, validators: true, publishEvery: 2 * time.Hour},
		{name: "404", n: 150, spec: farm.Spec{Status: 404}},
		{name: "500", n: 80, spec: farm.Spec{Status: 500}},
		{name: "403", n: 50, spec: farm.Spec{Status: 403}},
		{name: "403, fixed after 8 h", n: 20, spec: farm.Spec{Status: 403, ETag: farm.ETagStrong, LastModified: true}, okGap: 5 * time.Minute, validators: true, recoverAt: 8 * time.Hour},
		{name: "410", n: 50, spec: farm.Spec{Status: 410}, extra: 1},
		{name: "429 + Retry-After", n: 30, host: 1, spec: farm.Spec{Status: 429, RetryAfter: "7200"}},
		{name: "slow", n: 4, host: 2, spec: farm.Spec{ETag: farm.ETagStrong, CacheControl: "max-age=21600", Latency: time.Second}, okGap: 6 * time.Hour, validators: true},
	}
}

// simFeed is one feed of the simulation.
type simFeed struct {
	cat  *simCat
	ff   *farm.Feed
	id   int64
	host int
	// versions of the validators the feed served: from request index
	// fromReq on, it answered with etag / lm.
	versions  []simVersion
	published int
}

type simVersion struct {
	fromReq  int
	etag, lm string
}

// TestPolitenessSimulation runs one poller against ~1,000 feeds of mixed
// behaviour for a simulated 24 hours (fake clock, driven by PollDue) and
// checks the farm's request log for what a publisher would see.
func TestPolitenessSimulation(t *testing.T) {
	span := 24 * time.Hour
	if testing.Short() {
		span = 6 * time.Hour
	}
	clk := clock.NewFake(wkT0.Add(-30 * time.Minute))
	s := wkOpen(t, clk)
	ctx := context.Background()
	var farms [3]*farm.Farm
	for i := range farms {
		fm, err := farm.Listen(clk, fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fm.Close)
		farms[i] = fm
	}

	cats := simCats()
	var feeds []*simFeed
	var urls []string
	var extra []int
	for ci := range cats {
		c := &cats[ci]
		for range c.n {
			ff := farms[c.host].AddFeed(c.spec)
			feeds = append(feeds, &simFeed{cat: c, ff: ff, host: c.host})
			if !c.digest {
				urls = append(urls, ff.URL())
				extra = append(extra, c.extra)
			}
		}
	}
	if len(feeds) < 1000 {
		t.Fatalf("only %d feeds", len(feeds))
	}
	byURL := map[string]int64{}
	for _, f := range wkBulkFollow(t, s, urls, extra, clk.Now()) {
		byURL[f.URL] = f.ID
	}
	for _, sf := range feeds {
		if sf.cat.digest {
			f := wkFollow(t, s, sf.ff.URL(), 1+sf.cat.extra, 1)
			byURL[f.URL] = f.ID
		}
	}
	for _, sf := range feeds {
		sf.id = byURL[sf.ff.URL()]
		sf.versions = []simVersion{{0, sf.ff.ETag(), sf.ff.LastModified()}}
	}

	// Start: the feeds are half an hour overdue, as after downtime (they
	// were polled before it: a first poll is not spread).
	clk.Set(wkT0)
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ?", wkT0.Add(-time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "sim", func(c *poller.Config) {
		if testing.Short() {
			// Six hours are too short for the start-up spread over the
			// default 10 minutes to vanish in the minute-of-hour buckets.
			c.SpreadWindow = time.Hour
		}
	})
	if n, err := p.SpreadOverdue(ctx); err != nil || n != int64(len(feeds)) {
		t.Fatalf("spread %d of %d overdue feeds: %v", n, len(feeds), err)
	}

	// Events: publications and recoveries, in time order.
	type event struct {
		at time.Time
		do func()
	}
	var events []event
	for _, sf := range feeds {
		if e := sf.cat.publishEvery; e > 0 {
			for at := wkT0.Add(e); at.Before(wkT0.Add(span)); at = at.Add(e) {
				events = append(events, event{at, func() {
					sf.ff.Publish()
					sf.published++
					sf.versions = append(sf.versions, simVersion{len(sf.ff.Requests()), sf.ff.ETag(), sf.ff.LastModified()})
				}})
			}
		}
		if r := sf.cat.recoverAt; r > 0 && r < span {
			events = append(events, event{wkT0.Add(r), func() {
				sf.ff.SetStatus(0)
				sf.versions = append(sf.versions, simVersion{len(sf.ff.Requests()), sf.ff.ETag(), sf.ff.LastModified()})
			}})
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })

	end := wkT0.Add(span)
	steps, polls := 0, 0
	start := time.Now()
	for {
		next, ok, err := s.NextPollDue(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		// Poll at the whole second at or after the due time: requests then
		// carry real second-of-minute values.
		at := next.Truncate(time.Second)
		if at.Before(next) {
			at = at.Add(time.Second)
		}
		if at.Before(clk.Now()) {
			at = clk.Now()
		}
		for len(events) > 0 && !events[0].at.After(at) {
			if events[0].at.After(clk.Now()) {
				clk.Set(events[0].at)
			}
			events[0].do()
			events = events[1:]
		}
		if at.After(end) {
			break
		}
		clk.Set(at)
		n, err := p.PollDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		polls += n
		steps++
		if steps > 200000 {
			t.Fatal("simulation does not converge")
		}
	}
	t.Logf("simulated %v: %d feeds, %d polls in %d steps, %.1f s real", span, len(feeds), polls, steps, time.Since(start).Seconds())

	// What publishers saw.
	var all []farm.Record
	for _, fm := range farms {
		all = append(all, fm.Requests()...)
	}
	// Every fetch is recorded: counted in its feed's log_seq, and logged
	// unless it repeated the feed's newest line (a 304 after a 304).
	if n := wkSum(t, s, "feeds", "log_seq"); n != int64(len(all)) {
		t.Errorf("farm saw %d requests, feeds count %d recorded polls", len(all), n)
	}
	if lines, polledFeeds := wkCount(t, s, "poll_log", "1 = 1"), wkCount(t, s, "feeds", "log_seq > 0"); lines >= int64(len(all)) || lines < polledFeeds {
		t.Errorf("poll_log has %d lines for %d polls of %d feeds: runs of 304s were not folded", lines, len(all), polledFeeds)
	} else {
		t.Logf("poll_log: %d lines for %d polls of %d feeds", lines, len(all), polledFeeds)
	}
	var lastB429 time.Time
	var hostB []farm.Record
	for _, sf := range feeds {
		reqs := sf.ff.Requests()
		name := fmt.Sprintf("%s feed %d", sf.cat.name, sf.ff.ID())
		if len(reqs) == 0 {
			// The rate-limited host is asked at most twice per Retry-After
			// window: not every one of its feeds gets a turn.
			if sf.host != 1 {
				t.Errorf("%s: never polled", name)
			}
			continue
		}
		if sf.host == 1 {
			hostB = append(hostB, reqs...)
		}
		wantUA := fmt.Sprintf("; %d subscribers)", 1+sf.cat.extra+b2i(sf.cat.digest))
		for i, r := range reqs {
			if r.Query != "" || r.Cookie != "" || r.Referer != "" || !strings.HasSuffix(r.UserAgent, wantUA) ||
				!strings.Contains(r.AcceptEncoding, "gzip") || !strings.Contains(r.Accept, "application/rss+xml") {
				t.Errorf("%s request %d: bad hygiene %+v", name, i, r)
			}
			if i == 0 {
				if r.IfNoneMatch != "" || r.IfModifiedSince != "" {
					t.Errorf("%s: first request carried validators we never received", name)
				}
				continue
			}
			prev := reqs[i-1]
			gap := r.Time.Sub(prev.Time)
			min := sf.cat.okGap
			if prev.Status != http.StatusOK && prev.Status != http.StatusNotModified {
				g, ok := errGap[prev.Status]
				if !ok {
					t.Errorf("%s: request %d after status %d", name, i, prev.Status)
				}
				min = g
			}
			if gap < min {
				t.Errorf("%s: request %d came %v after a %d; at least %v allowed", name, i, gap, prev.Status, min)
			}
			// Polled on time, too (interval + up to 10 % jitter + the
			// 1 s step), on the main host where nothing else intervenes.
			if sf.host == 0 && (prev.Status == http.StatusOK || prev.Status == http.StatusNotModified) && gap > min+min/10+time.Second {
				t.Errorf("%s: request %d came %v after a %d; due after %v", name, i, gap, prev.Status, min)
			}
			// Validators: exactly the last ones the server sent.
			wantETag, wantLM := "", ""
			for j := i - 1; j >= 0; j-- {
				if reqs[j].Status == http.StatusOK || reqs[j].Status == http.StatusNotModified {
					v := sf.versionAt(j)
					wantETag, wantLM = v.etag, v.lm
					break
				}
			}
			if r.IfNoneMatch != wantETag || r.IfModifiedSince != wantLM {
				t.Errorf("%s request %d: sent If-None-Match %q If-Modified-Since %q, last received %q %q",
					name, i, r.IfNoneMatch, r.IfModifiedSince, wantETag, wantLM)
			}
			if sf.cat.validators && (wantETag != "" || wantLM != "") && r.IfNoneMatch == "" && r.IfModifiedSince == "" {
				t.Errorf("%s request %d: unconditional after validators", name, i)
			}
		}
		if sf.cat.spec.Status == http.StatusGone && len(reqs) != 1 {
			t.Errorf("%s: %d requests to a 410 feed, want 1", name, len(reqs))
		}
		for _, r := range reqs {
			if r.Status == http.StatusTooManyRequests && r.Time.After(lastB429) {
				lastB429 = r.Time
			}
		}
	}
	// A 429 backs off the whole host: nothing to host B within 2 h of any
	// 429 (requests already in flight at the same instant excepted).
	sort.Slice(hostB, func(i, j int) bool { return hostB[i].Time.Before(hostB[j].Time) })
	for i, r := range hostB {
		if r.Status != http.StatusTooManyRequests {
			continue
		}
		for _, q := range hostB[i+1:] {
			if q.Time.After(r.Time) && q.Time.Before(r.Time.Add(2*time.Hour)) {
				t.Errorf("request to the rate-limiting host %v after its 429 (Retry-After 2 h)", q.Time.Sub(r.Time))
			}
		}
	}
	if lastB429.IsZero() || len(hostB) < 2 {
		t.Errorf("rate-limited host: %d requests", len(hostB))
	}

	// Spread: no second-of-minute or minute-of-hour bucket over twice its
	// fair share.
	var secs, mins [60]int
	for _, r := range all {
		secs[r.Time.Second()]++
		mins[r.Time.Minute()]++
	}
	fair := float64(len(all)) / 60
	for i := range 60 {
		if float64(secs[i]) > 2*fair {
			t.Errorf("second %02d of the minute holds %d of %d requests (fair share %.0f)", i, secs[i], len(all), fair)
		}
		if float64(mins[i]) > 2*fair {
			t.Errorf("minute %02d of the hour holds %d of %d requests (fair share %.0f)", i, mins[i], len(all), fair)
		}
	}
	t.Logf("busiest second-of-minute %d, minute-of-hour %d, fair share %.0f", maxOf(secs[:]), maxOf(mins[:]), fair)

	// What the store says: every post mailed once to each instant
	// subscriber and queued once for the digest subscriber; nothing else
	// mailed; 410 feeds gone with their subscribers told.
	for _, sf := range feeds {
		if sf.published == 0 {
			continue
		}
		instant := int64(sf.published * (1 + sf.cat.extra))
		if n := wkCount(t, s, "outbox o JOIN items i ON i.id = o.item_id", "i.feed_id = ? AND o.kind = ?", sf.id, store.KindItem); n != instant {
			t.Errorf("%s feed %d: %d emails for %d posts, want %d", sf.cat.name, sf.ff.ID(), n, sf.published, instant)
		}
		if n := wkCount(t, s, "digest_items", "feed_id = ?", sf.id); n != int64(sf.published) {
			t.Errorf("%s feed %d: %d digest items for %d posts", sf.cat.name, sf.ff.ID(), n, sf.published)
		}
	}
	var published int64
	for _, sf := range feeds {
		published += int64(sf.published * (1 + sf.cat.extra))
	}
	if n := wkCount(t, s, "outbox", "kind = ?", store.KindItem); n != published || published == 0 {
		t.Errorf("%d item emails queued in all, want %d", n, published)
	}
	gone := 0
	for _, c := range cats {
		if c.spec.Status == http.StatusGone {
			gone += c.n
			if n := wkCount(t, s, "outbox", "kind = ? AND dedupe_key LIKE 'gone:%'", store.KindNotice); n != int64(c.n*(1+c.extra)) {
				t.Errorf("%d gone notices, want %d", n, c.n*(1+c.extra))
			}
		}
	}
	if n := wkCount(t, s, "feeds", "state = ?", store.FeedGone); n != int64(gone) {
		t.Errorf("%d feeds gone, want %d", n, gone)
	}
	if n := wkCount(t, s, "feeds", "lease_owner <> ''"); n != 0 {
		t.Errorf("%d feeds still leased", n)
	}
}

func (sf *simFeed) versionAt(req int) simVersion {
	v := sf.versions[0]
	for _, w := range sf.versions {
		if w.fromReq <= req {
			v = w
		}
	}
	return v
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
