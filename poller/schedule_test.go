package poller

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

// fastVal is a fast answer with both validators.
func fastVal(kind OutcomeKind, h http.Header) Result {
	return Result{Kind: kind, Status: 200, Header: h, Elapsed: 120 * time.Millisecond, HasETag: true, HasLastModified: true}
}

// httpErr is an error response with the given status and headers.
func httpErr(status int, kv ...string) Result {
	return Result{Kind: HTTPError, Status: status, Header: hdr(kv...), Elapsed: 80 * time.Millisecond, HasETag: true}
}

// active is a feed that saw a new item an hour ago.
var active = History{LastNewItemAt: testNow.Add(-time.Hour), FirstSeenAt: testNow.Add(-400 * day)}

// failing returns an active history with n consecutive errors since since.
func failing(n int, since time.Duration) History {
	h := active
	h.ConsecutiveErrors = n
	h.ErrorsSince = testNow.Add(-since)
	return h
}

func TestSchedule(t *testing.T) {
	date := httpDate(testNow)
	type want struct {
		interval    time.Duration
		reason      string
		state       string // "" means StateActive
		errs        int
		since       time.Time // expected ErrorsSince
		hostBackoff time.Duration
	}
	tests := []struct {
		name string
		h    History
		r    Result
		want want
	}{
		// Rule 3: the default.
		{"default fast with ETag and Last-Modified", active, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"default fast with ETag only", active, Result{Kind: OK, Elapsed: 300 * time.Millisecond, HasETag: true},
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 300 ms with ETag"}},
		{"default fast with Last-Modified only", active, Result{Kind: OK, Elapsed: 999 * time.Millisecond, HasLastModified: true},
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 999 ms with Last-Modified"}},
		{"exactly 1 s is not fast", active, Result{Kind: OK, Elapsed: time.Second, HasETag: true},
			want{interval: 15 * time.Minute, reason: "default 15 min: answered in 1 s with ETag"}},
		{"fast without validator", active, Result{Kind: OK, Elapsed: 120 * time.Millisecond},
			want{interval: 15 * time.Minute, reason: "default 15 min: answered in 120 ms without ETag or Last-Modified"}},
		{"slow without validator", active, Result{Kind: OK, Elapsed: 2500 * time.Millisecond},
			want{interval: time.Hour, reason: "default 1 h: answered in 2.5 s without ETag or Last-Modified"}},
		{"unmeasured zero elapsed counts as fast", active, Result{Kind: OK, HasETag: true},
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 0 s with ETag"}},
		{"negative elapsed counts as slow", active, Result{Kind: OK, Elapsed: -1, HasETag: true},
			want{interval: 15 * time.Minute, reason: "default 15 min: response time unknown with ETag"}},
		{"same-hash 200 is a success", active, fastVal(Unchanged, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"304 is a success", active, fastVal(NotModified, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},

		// Rule 2 and 4: caching headers, the cap and the floor.
		{"max-age", active, fastVal(OK, hdr("Cache-Control", "max-age=900")),
			want{interval: 15 * time.Minute, reason: "Cache-Control max-age=900"}},
		{"max-age on a 304", active, fastVal(NotModified, hdr("Cache-Control", "max-age=3600")),
			want{interval: time.Hour, reason: "Cache-Control max-age=3600"}},
		{"max-age with Age", active, fastVal(OK, hdr("Cache-Control", "max-age=900", "Age", "100")),
			want{interval: 800 * time.Second, reason: "Cache-Control max-age=900 minus Age 100"}},
		{"max-age above 24 h is capped", active, fastVal(OK, hdr("Cache-Control", "max-age=172800")),
			want{interval: 24 * time.Hour, reason: "Cache-Control max-age=172800, capped at 24 h"}},
		{"max-age below the fast floor", active, fastVal(OK, hdr("Cache-Control", "max-age=60")),
			want{interval: 5 * time.Minute, reason: "Cache-Control max-age=60, raised to the 5 min floor"}},
		{"max-age=0 gets the floor", active, fastVal(OK, hdr("Cache-Control", "max-age=0")),
			want{interval: 5 * time.Minute, reason: "Cache-Control max-age=0, raised to the 5 min floor"}},
		{"max-age below the slow floor", active, Result{Kind: OK, Header: hdr("Cache-Control", "max-age=60"), Elapsed: 1500 * time.Millisecond, HasETag: true},
			want{interval: 15 * time.Minute, reason: "Cache-Control max-age=60, raised to the 15 min floor (answered in 1.5 s)"}},
		{"max-age below the floor without validator", active, Result{Kind: OK, Header: hdr("Cache-Control", "max-age=60"), Elapsed: 100 * time.Millisecond},
			want{interval: 15 * time.Minute, reason: "Cache-Control max-age=60, raised to the 15 min floor (no ETag or Last-Modified)"}},
		{"max-age below the floor, slow and no validator", active, Result{Kind: OK, Header: hdr("Cache-Control", "max-age=60"), Elapsed: 3 * time.Second},
			want{interval: 15 * time.Minute, reason: "Cache-Control max-age=60, raised to the 15 min floor (answered in 3 s, no ETag or Last-Modified)"}},
		{"Expires − Date", active, fastVal(OK, hdr("Date", date, "Expires", httpDate(testNow.Add(2*time.Hour)))),
			want{interval: 2 * time.Hour, reason: "Expires − Date = 2 h"}},
		{"Expires without Date", active, fastVal(OK, hdr("Expires", httpDate(testNow.Add(45*time.Minute)))),
			want{interval: 45 * time.Minute, reason: "Expires − Date = 45 min"}},
		{"Expires in the past falls back to the default", active, fastVal(OK, hdr("Date", date, "Expires", httpDate(testNow.Add(-time.Hour)))),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"Expires invalid falls back to the default", active, fastVal(OK, hdr("Date", date, "Expires", "0")),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"Expires beyond 24 h is capped", active, fastVal(OK, hdr("Date", date, "Expires", httpDate(testNow.Add(72*time.Hour)))),
			want{interval: 24 * time.Hour, reason: "Expires − Date = 3 days, capped at 24 h"}},

		// Rule 1: WebSub.
		{"WebSub active", History{WebSubActive: true, LastNewItemAt: testNow.Add(-time.Hour)}, fastVal(OK, hdr("Cache-Control", "max-age=60")),
			want{interval: 7 * day, reason: "WebSub active: backup poll weekly"}},
		{"WebSub active and quiet for years", History{WebSubActive: true, LastNewItemAt: testNow.Add(-3 * 365 * day)}, fastVal(NotModified, nil),
			want{interval: 7 * day, reason: "WebSub active: backup poll weekly"}},
		{"WebSub active and an error", History{WebSubActive: true}, httpErr(404),
			want{interval: 7 * day, reason: "404: penalty 24 h (1st consecutive error); WebSub active: backup poll weekly", errs: 1, since: testNow}},

		// Rule 5: inactivity.
		{"30 days quiet is not inactive", History{LastNewItemAt: testNow.Add(-30 * day)}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"exactly one month quiet is not inactive", History{LastNewItemAt: testNow.Add(-month)}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"31 days quiet", History{LastNewItemAt: testNow.Add(-31 * day)}, fastVal(OK, nil),
			want{interval: 31 * day * 2 / 1461, reason: "inactive for 31 days: at least 1 h 1 min"}},
		{"one month and a second quiet is about 1 h", History{LastNewItemAt: testNow.Add(-month - time.Second)}, fastVal(OK, nil),
			want{interval: (month + time.Second) * 2 / 1461, reason: "inactive for 30 days: at least 1 h"}},
		{"6 months quiet → 6 h", History{LastNewItemAt: testNow.Add(-6 * month)}, fastVal(OK, nil),
			want{interval: 6 * time.Hour, reason: "inactive for 6 months: at least 6 h"}},
		{"6 months quiet beats max-age", History{LastNewItemAt: testNow.Add(-6 * month)}, fastVal(OK, hdr("Cache-Control", "max-age=900")),
			want{interval: 6 * time.Hour, reason: "inactive for 6 months: at least 6 h"}},
		{"1 year quiet → 12 h", History{LastNewItemAt: testNow.Add(-year)}, fastVal(OK, nil),
			want{interval: 12 * time.Hour, reason: "inactive for 12 months: at least 12 h"}},
		{"2 years quiet → 24 h", History{LastNewItemAt: testNow.Add(-2 * year)}, fastVal(OK, nil),
			want{interval: 24 * time.Hour, reason: "inactive for 2 years: at least 24 h"}},
		{"5 years quiet is capped at 24 h", History{LastNewItemAt: testNow.Add(-5 * year)}, fastVal(OK, nil),
			want{interval: 24 * time.Hour, reason: "inactive for 5 years: at least 24 h"}},
		{"never a new item: FirstSeenAt counts", History{FirstSeenAt: testNow.Add(-6 * month)}, fastVal(OK, nil),
			want{interval: 6 * time.Hour, reason: "inactive for 6 months: at least 6 h"}},
		{"new items now: not inactive", History{LastNewItemAt: testNow.Add(-2 * year)}, Result{Kind: OK, Elapsed: 100 * time.Millisecond, HasETag: true, NewItems: true},
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 100 ms with ETag"}},
		{"no dates at all: not inactive", History{}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"item date in the future: not inactive", History{LastNewItemAt: testNow.Add(day)}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"inactivity applies to errors", History{LastNewItemAt: testNow.Add(-2 * year)}, Result{Kind: Failure, Failure: "timeout", Elapsed: 30 * time.Second},
			want{interval: 24 * time.Hour, reason: "timeout: penalty 1 h (1st consecutive error); inactive for 2 years: at least 24 h", errs: 1, since: testNow}},

		// Host minimum.
		{"host minimum on a success", History{HostMinInterval: 2 * time.Hour}, fastVal(OK, nil),
			want{interval: 2 * time.Hour, reason: "host minimum interval 2 h (operator setting)"}},
		{"host minimum below the interval", History{HostMinInterval: time.Minute}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"host minimum on an error", History{HostMinInterval: 48 * time.Hour}, httpErr(404),
			want{interval: 48 * time.Hour, reason: "404: penalty 24 h (1st consecutive error); host minimum interval 2 days (operator setting)", errs: 1, since: testNow}},
		{"negative host minimum ignored", History{HostMinInterval: -time.Hour}, fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"huge host minimum capped", History{HostMinInterval: math.MaxInt64}, fastVal(OK, nil),
			want{interval: year, reason: "host minimum interval 365 days 6 h (operator setting)"}},

		// Status codes.
		{"404 3rd consecutive error", failing(2, 2*day), httpErr(404),
			want{interval: 24 * time.Hour, reason: "404: penalty 24 h (3rd consecutive error)", errs: 3, since: testNow.Add(-2 * day)}},
		{"403", active, httpErr(403),
			want{interval: 4 * time.Hour, reason: "403: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},
		{"500", active, httpErr(500),
			want{interval: 4 * time.Hour, reason: "500: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},
		{"502 2nd", failing(1, 4*time.Hour), httpErr(502),
			want{interval: 4 * time.Hour, reason: "502: penalty 4 h (2nd consecutive error)", errs: 2, since: testNow.Add(-4 * time.Hour)}},
		{"599", active, httpErr(599),
			want{interval: 4 * time.Hour, reason: "599: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},
		{"503 without Retry-After is a plain 5xx", active, httpErr(503),
			want{interval: 4 * time.Hour, reason: "503: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},
		{"503 with garbage Retry-After is a plain 5xx", active, httpErr(503, "Retry-After", "later"),
			want{interval: 4 * time.Hour, reason: "503: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},
		{"503 with Retry-After seconds", active, httpErr(503, "Retry-After", "3600"),
			want{interval: time.Hour, reason: "503: Retry-After 3600 s (1st consecutive error)", errs: 1, since: testNow, hostBackoff: time.Hour}},
		{"429 with Retry-After 120 s gets the floor", active, httpErr(429, "Retry-After", "120"),
			want{interval: 15 * time.Minute, reason: "429: Retry-After 120 s (1st consecutive error); raised to the 15 min floor", errs: 1, since: testNow, hostBackoff: 2 * time.Minute}},
		{"429 with Retry-After 90 s", active, httpErr(429, "Retry-After", "90"),
			want{interval: 15 * time.Minute, reason: "429: Retry-After 90 s (1st consecutive error); raised to the 15 min floor", errs: 1, since: testNow, hostBackoff: 90 * time.Second}},
		{"429 with Retry-After date", active, httpErr(429, "Retry-After", httpDate(testNow.Add(2*time.Hour))),
			want{interval: 2 * time.Hour, reason: "429: Retry-After 2 h (1st consecutive error)", errs: 1, since: testNow, hostBackoff: 2 * time.Hour}},
		{"429 Retry-After date against the server's Date", active, httpErr(429, "Date", httpDate(testNow.Add(-time.Hour)), "Retry-After", httpDate(testNow.Add(time.Hour))),
			want{interval: 2 * time.Hour, reason: "429: Retry-After 2 h (1st consecutive error)", errs: 1, since: testNow, hostBackoff: 2 * time.Hour}},
		{"429 Retry-After date in the past", active, httpErr(429, "Retry-After", httpDate(testNow.Add(-time.Hour))),
			want{interval: 15 * time.Minute, reason: "429: Retry-After date already passed (1st consecutive error); raised to the 15 min floor", errs: 1, since: testNow, hostBackoff: time.Minute}},
		{"429 Retry-After 0 backs the host off 1 min", active, httpErr(429, "Retry-After", "0"),
			want{interval: 15 * time.Minute, reason: "429: Retry-After 0 s (1st consecutive error); raised to the 15 min floor", errs: 1, since: testNow, hostBackoff: time.Minute}},
		{"429 Retry-After capped at 7 days", active, httpErr(429, "Retry-After", "2592000"),
			want{interval: 7 * day, reason: "429: Retry-After 2592000 s, capped at 7 days (1st consecutive error)", errs: 1, since: testNow, hostBackoff: 7 * day}},
		{"429 without Retry-After", active, httpErr(429),
			want{interval: 4 * time.Hour, reason: "429 without Retry-After: penalty 4 h (1st consecutive error)", errs: 1, since: testNow, hostBackoff: 4 * time.Hour}},
		{"429 with garbage Retry-After", active, httpErr(429, "Retry-After", "-1"),
			want{interval: 4 * time.Hour, reason: "429 without Retry-After: penalty 4 h (1st consecutive error)", errs: 1, since: testNow, hostBackoff: 4 * time.Hour}},
		{"500 with a longer Retry-After", active, httpErr(500, "Retry-After", "28800"),
			want{interval: 8 * time.Hour, reason: "500: penalty 4 h (1st consecutive error); Retry-After 28800 s", errs: 1, since: testNow}},
		{"404 with a shorter Retry-After", active, httpErr(404, "Retry-After", "60"),
			want{interval: 24 * time.Hour, reason: "404: penalty 24 h (1st consecutive error)", errs: 1, since: testNow}},
		{"410 gone", active, httpErr(410),
			want{interval: 24 * time.Hour, reason: "410 Gone: polling stopped (1st consecutive error)", state: StateGone, errs: 1, since: testNow}},
		{"410 after 100 days of errors stays gone", failing(99, 100*day), httpErr(410),
			want{interval: 24 * time.Hour, reason: "410 Gone: polling stopped (100th consecutive error)", state: StateGone, errs: 100, since: testNow.Add(-100 * day)}},
		{"HTTPError without status", active, Result{Kind: HTTPError},
			want{interval: time.Hour, reason: "HTTP error: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},

		// Growing penalty: 1, 2, 4, 8, 16, 24, 24 h.
		{"400 1st", failing(0, 0), httpErr(400), want{interval: time.Hour, reason: "400: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},
		{"400 2nd", failing(1, time.Hour), httpErr(400), want{interval: 2 * time.Hour, reason: "400: penalty 2 h (2nd consecutive error)", errs: 2, since: testNow.Add(-time.Hour)}},
		{"timeout 3rd", failing(2, time.Hour), Result{Kind: Failure, Failure: "timeout"}, want{interval: 4 * time.Hour, reason: "timeout: penalty 4 h (3rd consecutive error)", errs: 3, since: testNow.Add(-time.Hour)}},
		{"timeout 4th", failing(3, time.Hour), Result{Kind: Failure, Failure: "timeout"}, want{interval: 8 * time.Hour, reason: "timeout: penalty 8 h (4th consecutive error)", errs: 4, since: testNow.Add(-time.Hour)}},
		{"timeout 5th", failing(4, time.Hour), Result{Kind: Failure, Failure: "timeout"}, want{interval: 16 * time.Hour, reason: "timeout: penalty 16 h (5th consecutive error)", errs: 5, since: testNow.Add(-time.Hour)}},
		{"timeout 6th", failing(5, time.Hour), Result{Kind: Failure, Failure: "timeout"}, want{interval: 24 * time.Hour, reason: "timeout: penalty 24 h (6th consecutive error)", errs: 6, since: testNow.Add(-time.Hour)}},
		{"timeout 7th", failing(6, time.Hour), Result{Kind: Failure, Failure: "timeout"}, want{interval: 24 * time.Hour, reason: "timeout: penalty 24 h (7th consecutive error)", errs: 7, since: testNow.Add(-time.Hour)}},
		{"not a feed 11th", failing(10, day), Result{Kind: Failure, Failure: "not a feed: text/html"}, want{interval: 24 * time.Hour, reason: "not a feed: text/html: penalty 24 h (11th consecutive error)", errs: 11, since: testNow.Add(-day)}},
		{"DNS 21st", failing(20, day), Result{Kind: Failure, Failure: "DNS"}, want{interval: 24 * time.Hour, reason: "DNS: penalty 24 h (21st consecutive error)", errs: 21, since: testNow.Add(-day)}},
		{"huge streak does not overflow", failing(math.MaxInt, day), Result{Kind: Failure, Failure: "reset"}, want{interval: 24 * time.Hour, reason: "reset: penalty 24 h (9223372036854775807th consecutive error)", errs: math.MaxInt, since: testNow.Add(-day)}},
		{"empty failure text", active, Result{Kind: Failure}, want{interval: time.Hour, reason: "failure: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},
		{"failure text on one line", active, Result{Kind: Failure, Failure: "parse error:\n\tline 3\r\n"}, want{interval: time.Hour, reason: "parse error: line 3: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},
		{"refused by our setting: no penalty, no streak", active, Result{Kind: Refused, Failure: "refused: private or local network address"},
			want{interval: RefusedRetry, reason: RefusedReasonPrefix + ": a private or local network address, not visited unless FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; no penalty, tried again in 1 h"}},
		{"refused after errors: the streak stays", failing(3, day), Result{Kind: Refused},
			want{interval: RefusedRetry, reason: RefusedReasonPrefix + ": a private or local network address, not visited unless FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; no penalty, tried again in 1 h", errs: 3, since: testNow.Add(-day)}},
		{"zero kind is a failure", active, Result{}, want{interval: time.Hour, reason: "failure: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},
		{"unknown kind is a failure", active, Result{Kind: 99, Failure: "weird"}, want{interval: time.Hour, reason: "weird: penalty 1 h (1st consecutive error)", errs: 1, since: testNow}},
		{"streak start in the future is reset to now", History{ConsecutiveErrors: 1, ErrorsSince: testNow.Add(time.Hour)}, httpErr(403),
			want{interval: 4 * time.Hour, reason: "403: penalty 4 h (2nd consecutive error)", errs: 2, since: testNow}},
		{"negative streak counts as none", History{ConsecutiveErrors: -3}, httpErr(403),
			want{interval: 4 * time.Hour, reason: "403: penalty 4 h (1st consecutive error)", errs: 1, since: testNow}},

		// A success ends the streak (and lifts a 403).
		{"success after 403", failing(1, 4*time.Hour), fastVal(OK, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},
		{"304 after 89 days of errors", failing(200, 89*day), fastVal(NotModified, nil),
			want{interval: 5 * time.Minute, reason: "default 5 min: answered in 120 ms with ETag and Last-Modified"}},

		// Blacklisting at 90 days of nothing but errors.
		{"error 1 s before 90 days", failing(100, 90*day-time.Second), Result{Kind: Failure, Failure: "timeout"},
			want{interval: 24 * time.Hour, reason: "timeout: penalty 24 h (101st consecutive error)", errs: 101, since: testNow.Add(-90*day + time.Second)}},
		{"error exactly 90 days in", failing(100, 90*day), Result{Kind: Failure, Failure: "timeout"},
			want{interval: 24 * time.Hour, reason: "blacklisted after 90 days of nothing but errors; last: timeout: penalty 24 h (101st consecutive error)", state: StateBlacklisted, errs: 101, since: testNow.Add(-90 * day)}},
		{"404 after 120 days", failing(111, 120*day), httpErr(404),
			want{interval: 24 * time.Hour, reason: "blacklisted after 120 days of nothing but errors; last: 404: penalty 24 h (112th consecutive error)", state: StateBlacklisted, errs: 112, since: testNow.Add(-120 * day)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Schedule(tt.h, tt.r, testNow, 0)
			w := tt.want
			if w.state == "" {
				w.state = StateActive
			}
			if d.Interval != w.interval {
				t.Errorf("Interval = %v; want %v", d.Interval, w.interval)
			}
			if !d.NextPoll.Equal(testNow.Add(w.interval)) {
				t.Errorf("NextPoll = %v; want now + %v with jitter 0", d.NextPoll, w.interval)
			}
			if d.Reason != w.reason {
				t.Errorf("Reason = %q\n                 want %q", d.Reason, w.reason)
			}
			if d.State != w.state {
				t.Errorf("State = %q; want %q", d.State, w.state)
			}
			if d.ConsecutiveErrors != w.errs {
				t.Errorf("ConsecutiveErrors = %d; want %d", d.ConsecutiveErrors, w.errs)
			}
			if !d.ErrorsSince.Equal(w.since) {
				t.Errorf("ErrorsSince = %v; want %v", d.ErrorsSince, w.since)
			}
			if wantPenalty := w.errs > 0 && tt.r.Kind != Refused; d.Penalty != wantPenalty {
				t.Errorf("Penalty = %v; want %v", d.Penalty, wantPenalty)
			}
			var wantBackoff time.Time
			if w.hostBackoff > 0 {
				wantBackoff = testNow.Add(w.hostBackoff)
			}
			if !d.HostBackoffUntil.Equal(wantBackoff) {
				t.Errorf("HostBackoffUntil = %v; want %v", d.HostBackoffUntil, wantBackoff)
			}
		})
	}
}

func TestScheduleJitter(t *testing.T) {
	r := fastVal(OK, hdr("Cache-Control", "max-age=3600"))
	tests := []struct {
		name   string
		jitter float64
		extra  time.Duration
	}{
		{"0 adds nothing", 0, 0},
		{"0.5 adds 5 %", 0.5, 3 * time.Minute},
		{"0.999 adds just under 10 %", 0.999, 359640 * time.Millisecond},
		{"negative is clamped to 0", -0.5, 0},
		{"NaN is clamped to 0", math.NaN(), 0},
		{"-Inf is clamped to 0", math.Inf(-1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Schedule(active, r, testNow, tt.jitter)
			if d.Interval != time.Hour {
				t.Fatalf("Interval = %v; want 1h (jitter must not change it)", d.Interval)
			}
			if got := d.NextPoll.Sub(testNow) - d.Interval; got != tt.extra {
				t.Errorf("extra = %v; want %v", got, tt.extra)
			}
		})
	}
	// 1 and above are clamped just under 1: never 10 % or more.
	for _, j := range []float64{1, 1.5, math.Inf(1)} {
		d := Schedule(active, r, testNow, j)
		if extra := d.NextPoll.Sub(testNow) - d.Interval; extra < 0 || extra >= 6*time.Minute {
			t.Errorf("jitter %v: extra %v, want in [0, 6 min)", j, extra)
		}
	}
}

// TestScheduleFirstPollSpread holds the spread after a first poll: the
// extra is up to the whole interval (feeds imported and polled together
// fall out of step at once), and never below the interval.
func TestScheduleFirstPollSpread(t *testing.T) {
	first := active
	first.FirstPoll = true
	r := fastVal(OK, hdr("Cache-Control", "max-age=300"))
	tests := []struct {
		name   string
		h      History
		jitter float64
		extra  time.Duration
	}{
		{"first poll, 0 adds nothing", first, 0, 0},
		{"first poll, 0.5 adds half the interval", first, 0.5, 150 * time.Second},
		{"first poll, 0.9 adds 90 %", first, 0.9, 270 * time.Second},
		{"later poll, 0.5 adds 5 %", active, 0.5, 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Schedule(tt.h, r, testNow, tt.jitter)
			if d.Interval != 5*time.Minute {
				t.Fatalf("Interval = %v; want 5m", d.Interval)
			}
			if got := d.NextPoll.Sub(testNow) - d.Interval; got != tt.extra {
				t.Errorf("extra = %v; want %v", got, tt.extra)
			}
		})
	}
	if d := Schedule(first, r, testNow, 1); d.NextPoll.Sub(testNow) >= 2*d.Interval {
		t.Errorf("jitter 1 after a first poll: next poll %v after now, want under two intervals", d.NextPoll.Sub(testNow))
	}
}

// TestScheduleJitterBounds checks every rule's interval against the jitter
// bounds: never earlier than now + Interval, at most +10 %.
func TestScheduleJitterBounds(t *testing.T) {
	results := []Result{
		fastVal(OK, nil),
		fastVal(OK, hdr("Cache-Control", "max-age=86400")),
		httpErr(404),
		httpErr(429, "Retry-After", "600"),
		{Kind: Failure, Failure: "timeout"},
	}
	for _, r := range results {
		for _, j := range []float64{0, 0.001, 0.25, 0.5, 0.75, 0.999, 0.9999999999} {
			d := Schedule(active, r, testNow, j)
			lo := testNow.Add(d.Interval)
			hi := testNow.Add(d.Interval + d.Interval/10)
			if d.NextPoll.Before(lo) || d.NextPoll.After(hi) {
				t.Errorf("%v jitter %v: NextPoll %v outside [%v, %v]", r.Kind, j, d.NextPoll, lo, hi)
			}
		}
	}
}

func TestGrowingPenalty(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 24, 24, 24}
	for i, w := range want {
		if got := growingPenalty(i + 1); got != w*time.Hour {
			t.Errorf("growingPenalty(%d) = %v; want %v h", i+1, got, w)
		}
	}
	for _, n := range []int{0, -1, 64, 65, math.MaxInt} {
		if got := growingPenalty(n); got < time.Hour || got > 24*time.Hour {
			t.Errorf("growingPenalty(%d) = %v; want within [1 h, 24 h]", n, got)
		}
	}
}

func TestInactivityFloor(t *testing.T) {
	tests := []struct {
		inactive, want time.Duration
	}{
		{month, time.Hour},
		{3 * month, 3 * time.Hour},
		{6 * month, 6 * time.Hour},
		{year, 12 * time.Hour},
		{18 * month, 18 * time.Hour},
		{2*year - time.Hour, 2 * (2*year - time.Hour) / 1461},
		{2 * year, 24 * time.Hour},
		{10 * year, 24 * time.Hour},
		{math.MaxInt64, 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := inactivityFloor(tt.inactive); got != tt.want {
			t.Errorf("inactivityFloor(%v) = %v; want %v", tt.inactive, got, tt.want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	tests := map[int]string{
		0: "0th", 1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 10: "10th", 11: "11th", 12: "12th", 13: "13th",
		14: "14th", 21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 111: "111th", 112: "112th", 1002: "1002nd",
	}
	for n, want := range tests {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q; want %q", n, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{time.Nanosecond, "0 ms"},
		{120 * time.Millisecond, "120 ms"},
		{999 * time.Millisecond, "999 ms"},
		{time.Second, "1 s"},
		{1250 * time.Millisecond, "1.25 s"},
		{30 * time.Second, "30 s"},
		{90 * time.Second, "90 s"},
		{2 * time.Minute, "2 min"},
		{15 * time.Minute, "15 min"},
		{12*time.Minute + 30*time.Second, "12 min 30 s"},
		{time.Hour, "1 h"},
		{time.Hour + 90*time.Second, "1 h 2 min"},
		{6 * time.Hour, "6 h"},
		{24 * time.Hour, "24 h"},
		{36 * time.Hour, "36 h"},
		{48 * time.Hour, "2 days"},
		{7 * day, "7 days"},
		{92*day + 3*time.Hour, "92 days 3 h"},
		{-90 * time.Second, "-90 s"},
	}
	for _, tt := range tests {
		if got := words(tt.d); got != tt.want {
			t.Errorf("words(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
	// Extremes must not panic or come out empty.
	for _, d := range []time.Duration{math.MaxInt64, math.MinInt64} {
		if words(d) == "" {
			t.Errorf("words(%v) is empty", d)
		}
	}
}

func TestAgeWords(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{31 * day, "31 days"},
		{60 * day, "60 days"},
		{61 * day, "2 months"},
		{6 * month, "6 months"},
		{23 * month, "23 months"},
		{2 * year, "2 years"},
		{2*year + year/2, "2.5 years"},
		{10 * year, "10 years"},
	}
	for _, tt := range tests {
		if got := ageWords(tt.d); got != tt.want {
			t.Errorf("ageWords(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
}

func TestFailureLabel(t *testing.T) {
	long := strings.Repeat("é", 200)
	tests := []struct {
		in, want string
	}{
		{"", "failure"},
		{" \n\t ", "failure"},
		{"timeout", "timeout"},
		{"a\x00b\x1bc", "a b c"},
		{"bad \xff utf-8", "bad \uFFFD utf-8"},
		{long, strings.Repeat("é", maxFailureLabel) + "…"},
	}
	for _, tt := range tests {
		if got := failureLabel(tt.in); got != tt.want {
			t.Errorf("failureLabel(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestOutcomeKindString(t *testing.T) {
	tests := map[OutcomeKind]string{
		OK: "ok", Unchanged: "unchanged", NotModified: "not-modified", HTTPError: "http-error", Failure: "failure", 0: "outcome(0)",
	}
	for k, want := range tests {
		if got := k.String(); got != want {
			t.Errorf("OutcomeKind(%d).String() = %q; want %q", int(k), got, want)
		}
	}
}
