package poller

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzDates are realistic date values for seeding: the three HTTP formats,
// past and future, and the usual garbage.
var fuzzDates = []string{
	"Mon, 02 Mar 2026 12:00:00 GMT",
	"Mon, 02 Mar 2026 14:00:00 GMT",
	"Sun, 01 Mar 2026 12:00:00 GMT",
	"Monday, 02-Mar-26 13:00:00 GMT",
	"Mon Mar  2 13:00:00 2026",
	"Thu, 19 Nov 1981 08:52:00 GMT",
	"Fri, 31 Dec 9999 23:59:59 GMT",
	"mon, 02 mar 2026 13:00:00 gmt",
	"Mon, 02 Mar 2026 14:00:00 +0100",
	"0", "-1", "", "now",
}

func FuzzFreshness(f *testing.F) {
	ccs := []string{
		"max-age=900", "public, max-age=3600", "max-age=0", "no-cache", "no-store, no-cache, must-revalidate",
		"s-maxage=600", `max-age="300"`, "MAX-AGE = 60", "private; max-age=120", "max-age=99999999999999999999",
		"max-age=-1", "max-age", `no-cache="a, max-age=5", max-age=7`, "",
	}
	for i, cc := range ccs {
		f.Add(cc, "", fuzzDates[i%len(fuzzDates)], fuzzDates[(i+1)%len(fuzzDates)], "")
	}
	for i, d := range fuzzDates {
		f.Add("", "public", d, fuzzDates[0], []string{"", "0", "100", "abc", "99999999999"}[i%5])
	}
	f.Fuzz(func(t *testing.T, cc1, cc2, expires, date, age string) {
		h := http.Header{}
		for name, v := range map[string]string{"Cache-Control": cc1, "Expires": expires, "Date": date, "Age": age} {
			if v != "" {
				h.Add(name, v)
			}
		}
		if cc2 != "" {
			h.Add("cache-control", cc2) // non-canonical second line
		}
		d, reason, ok := Freshness(h, testNow)
		if !ok {
			if d != 0 || reason != "" {
				t.Fatalf("not ok but d=%v reason=%q", d, reason)
			}
			return
		}
		if d < 0 {
			t.Fatalf("negative freshness %v", d)
		}
		if reason == "" || !utf8.ValidString(reason) {
			t.Fatalf("bad reason %q", reason)
		}
		if strings.HasPrefix(reason, "Cache-Control") && d > maxDeltaSeconds*time.Second {
			t.Fatalf("max-age freshness %v above 2^31 s", d)
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, v := range append([]string{"120", "0", " 90 ", `"30"`, "-5", "+5", "1.5", "99999999999999999999", "soon"}, fuzzDates...) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, testNow)
		if !ok && d != 0 {
			t.Fatalf("not ok but d=%v", d)
		}
		if d < 0 {
			t.Fatalf("negative wait %v for %q", d, v)
		}
		if ok && isRetryAfterSeconds(v) && d > maxDeltaSeconds*time.Second {
			t.Fatalf("seconds above 2^31: %v", d)
		}
	})
}

func FuzzSchedule(f *testing.F) {
	type seed struct {
		kind                     int
		status                   int
		elapsedMS                int64
		etag, lm, newItems       bool
		cc, expires, date, ra    string
		failure                  string
		errs                     int
		sinceH, lastNewH, firstH int64 // hours before now; ≤ 0 means zero time
		websub                   bool
		hostMinS                 int64
		jitter                   float64
	}
	seeds := []seed{
		{kind: int(OK), status: 200, elapsedMS: 120, etag: true, lm: true, lastNewH: 1, firstH: 9000, jitter: 0.3},
		{kind: int(OK), status: 200, elapsedMS: 1000, etag: true, cc: "max-age=900", lastNewH: 800, jitter: 0.999},
		{kind: int(NotModified), status: 304, elapsedMS: 40, lm: true, cc: "max-age=0", date: fuzzDates[0], jitter: 0},
		{kind: int(Unchanged), status: 200, elapsedMS: 2500, expires: fuzzDates[1], date: fuzzDates[0], firstH: 20000},
		{kind: int(OK), status: 200, elapsedMS: 90, websub: true, newItems: true, hostMinS: 7200},
		{kind: int(HTTPError), status: 404, elapsedMS: 50, errs: 2, sinceH: 30},
		{kind: int(HTTPError), status: 429, ra: "120", jitter: 0.5},
		{kind: int(HTTPError), status: 429, ra: fuzzDates[1], date: fuzzDates[2]},
		{kind: int(HTTPError), status: 503, ra: "Fri, 31 Dec 9999 23:59:59 GMT"},
		{kind: int(HTTPError), status: 410, errs: 5, sinceH: 2200},
		{kind: int(HTTPError), status: 403, errs: 1, sinceH: 4},
		{kind: int(Failure), failure: "timeout", errs: 6, sinceH: 2160},
		{kind: int(Failure), failure: "not a feed: text/html\n", errs: math.MaxInt32, sinceH: 100000, hostMinS: math.MaxInt64},
		{kind: 0, status: 0, elapsedMS: -1, jitter: math.NaN()},
		{kind: -7, status: -1, elapsedMS: math.MaxInt64 / 1000, errs: -4, sinceH: -5, lastNewH: -3, jitter: -1},
	}
	for _, s := range seeds {
		f.Add(s.kind, s.status, s.elapsedMS, s.etag, s.lm, s.newItems, s.cc, s.expires, s.date, s.ra, s.failure,
			s.errs, s.sinceH, s.lastNewH, s.firstH, s.websub, s.hostMinS, s.jitter)
	}
	f.Fuzz(func(t *testing.T, kind, status int, elapsedMS int64, etag, lm, newItems bool, cc, expires, date, ra, failure string,
		errs int, sinceH, lastNewH, firstH int64, websub bool, hostMinS int64, jitter float64) {
		ago := func(hours int64) time.Time {
			if hours <= 0 {
				return time.Time{}
			}
			return testNow.Add(-time.Duration(min(hours, 1_000_000)) * time.Hour)
		}
		h := http.Header{}
		for name, v := range map[string]string{"Cache-Control": cc, "Expires": expires, "Date": date, "Retry-After": ra} {
			if v != "" {
				h.Set(name, v)
			}
		}
		hist := History{
			ConsecutiveErrors: errs,
			ErrorsSince:       ago(sinceH),
			LastNewItemAt:     ago(lastNewH),
			FirstSeenAt:       ago(firstH),
			WebSubActive:      websub,
			HostMinInterval:   time.Duration(hostMinS) * time.Second,
		}
		res := Result{
			Kind: OutcomeKind(kind), Status: status, Header: h,
			Elapsed: time.Duration(elapsedMS) * time.Millisecond,
			HasETag: etag, HasLastModified: lm, Failure: failure, NewItems: newItems,
		}
		d := Schedule(hist, res, testNow, jitter)

		if d.Interval < fastFloor {
			t.Fatalf("interval %v below the 5 min floor", d.Interval)
		}
		if d.Interval > max(MaxHostMinInterval, WebSubBackupInterval, MaxRetryAfter) {
			t.Fatalf("interval %v above every cap", d.Interval)
		}
		if d.NextPoll.Before(testNow.Add(d.Interval)) {
			t.Fatalf("NextPoll %v earlier than now + %v", d.NextPoll, d.Interval)
		}
		if extra := d.NextPoll.Sub(testNow) - d.Interval; extra > d.Interval/10 {
			t.Fatalf("jitter extra %v above 10 %% of %v", extra, d.Interval)
		}
		if d.Reason == "" || !utf8.ValidString(d.Reason) || strings.ContainsAny(d.Reason, "\n\r") {
			t.Fatalf("bad reason %q", d.Reason)
		}
		switch d.State {
		case StateActive, StateGone, StateBlacklisted:
		default:
			t.Fatalf("unknown state %q", d.State)
		}
		success := res.Kind.success()
		if success != (d.ConsecutiveErrors == 0) || success == d.Penalty {
			t.Fatalf("success=%v but ConsecutiveErrors=%d Penalty=%v", success, d.ConsecutiveErrors, d.Penalty)
		}
		if success && (d.State != StateActive || !d.ErrorsSince.IsZero() || !d.HostBackoffUntil.IsZero()) {
			t.Fatalf("success gave state %q, ErrorsSince %v, HostBackoffUntil %v", d.State, d.ErrorsSince, d.HostBackoffUntil)
		}
		if !success && (d.ErrorsSince.IsZero() || d.ErrorsSince.After(testNow)) {
			t.Fatalf("error streak start %v", d.ErrorsSince)
		}
		if !d.HostBackoffUntil.IsZero() && (!d.HostBackoffUntil.After(testNow) || d.HostBackoffUntil.After(testNow.Add(MaxRetryAfter))) {
			t.Fatalf("HostBackoffUntil %v out of (now, now+7 days]", d.HostBackoffUntil)
		}
	})
}
