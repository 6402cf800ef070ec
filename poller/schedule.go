package poller

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// OutcomeKind classifies what one poll of a feed produced. The zero value is
// not a valid kind: Schedule treats it (and any unknown value) as a Failure,
// so a Result whose Kind was forgotten is never mistaken for a success.
type OutcomeKind int

const (
	// OK: 200 with a body that differs from last time and parsed as a feed.
	OK OutcomeKind = iota + 1
	// Unchanged: 200 with the same body hash as last time (not parsed).
	Unchanged
	// NotModified: 304 to a conditional GET.
	NotModified
	// HTTPError: any other final status, including 403, 404, 410, 429, 5xx.
	HTTPError
	// Failure: no usable HTTP answer or no feed in it: timeout, DNS, TLS,
	// connection reset, body too large, too many redirects, not a feed,
	// parse error.
	Failure
)

// String returns the kind's name, for logs.
func (k OutcomeKind) String() string {
	switch k {
	case OK:
		return "ok"
	case Unchanged:
		return "unchanged"
	case NotModified:
		return "not-modified"
	case HTTPError:
		return "http-error"
	case Failure:
		return "failure"
	}
	return "outcome(" + strconv.Itoa(int(k)) + ")"
}

// success reports whether the outcome counts as a successful poll: 200 (new
// or same body) and 304 all end an error streak.
func (k OutcomeKind) success() bool { return k == OK || k == Unchanged || k == NotModified }

// Feed states a Decision can put a feed in.
const (
	// StateActive: the feed is polled at Decision.NextPoll.
	StateActive = "active"
	// StateGone: the feed answered 410 Gone; it is not polled again and its
	// subscribers are to be told and their subscriptions ended.
	StateGone = "gone"
	// StateBlacklisted: the feed produced nothing but errors for
	// BlacklistAfter; only a publisher ping or an admin revives it, and only
	// if it then fetches fine.
	StateBlacklisted = "blacklisted"
)

// Intervals and limits of the schedule (see DESIGN.md, "Polling interval" and
// "Errors").
const (
	// MaxInterval caps the interval taken from caching headers, the growing
	// error penalty and the inactivity floor: every active feed that is not
	// on WebSub, not rate-limited and not slowed by its operator is looked at
	// at least daily.
	MaxInterval = 24 * time.Hour
	// WebSubBackupInterval is the backup poll of a feed with an active WebSub
	// subscription.
	WebSubBackupInterval = 7 * 24 * time.Hour
	// BlacklistAfter is how long a feed may produce nothing but errors before
	// it is blacklisted.
	BlacklistAfter = 90 * 24 * time.Hour
	// MaxRetryAfter caps what a Retry-After header can ask for, so that a
	// typo or a date in the year 2099 does not silence a feed for good.
	MaxRetryAfter = 7 * 24 * time.Hour
	// MaxHostMinInterval caps the operator's per-host minimum interval.
	MaxHostMinInterval = year
)

const (
	fastResponse     = time.Second      // "answered in < 1 s"; exactly 1 s is slow
	fastFloor        = 5 * time.Minute  // floor (and default) for a fast feed with a validator
	slowFloor        = 15 * time.Minute // floor for everything else, errors included
	slowDefault      = time.Hour        // default for a slow feed without validators
	statusPenalty    = 4 * time.Hour    // 403, 5xx, 429 or 503 without Retry-After
	notFoundPenalty  = 24 * time.Hour   // 404
	firstPenalty     = time.Hour        // first step of the growing penalty
	minHostBackoff   = time.Minute      // a 429 always backs the host off at least this long
	jitterFraction   = 0.1              // up to +10 % of the interval
	year             = 8766 * time.Hour // 365.25 days
	month            = year / 12        // 30.4375 days
	inactiveFullYear = 2 * year         // inactivity floor reaches MaxInterval here
)

// Result is what the fetcher learned from one poll; it is the input of
// Schedule together with the feed's History.
type Result struct {
	Kind   OutcomeKind
	Status int         // final HTTP status; 0 for transport failures
	Header http.Header // response headers (Cache-Control, Expires, Date, Age, Retry-After)
	// Elapsed is the time to the full response. Negative means unmeasured and
	// counts as slow; zero (a fake clock in tests) counts as fast.
	Elapsed         time.Duration
	HasETag         bool   // the feed has an ETag validator (sent now or stored earlier)
	HasLastModified bool   // the feed has a Last-Modified validator (sent now or stored earlier)
	Failure         string // short description for Kind Failure ("timeout", "not a feed: …")
	NewItems        bool   // this poll found new items
}

// History is what the store knows about the feed before this poll.
type History struct {
	ConsecutiveErrors int       // errors in a row before this poll
	ErrorsSince       time.Time // start of the current error streak; zero when the last poll succeeded
	LastNewItemAt     time.Time // when a new item was last seen; zero: never (FirstSeenAt is used)
	FirstSeenAt       time.Time // when the feed was added
	WebSubActive      bool      // an active (verified, unexpired) WebSub subscription
	// HostMinInterval is the operator's minimum interval for the feed's host
	// (0 = none; negative is ignored; capped at MaxHostMinInterval).
	HostMinInterval time.Duration
}

// Decision is what Schedule decided; the store persists all of it.
type Decision struct {
	// NextPoll is now + Interval + jitter. It is filled for every state:
	// for "gone" and "blacklisted" it is a conservative fallback for a
	// caller that forgets to check State, which is authoritative.
	NextPoll time.Time
	Interval time.Duration // interval before jitter; always ≥ 5 min
	// Reason explains the interval in words for the public status page.
	// For a success it names the rule that decided the interval; for an
	// error it starts with the error and appends, after "; ", each floor that
	// lengthened the wait.
	Reason            string
	State             string    // StateActive, StateGone or StateBlacklisted
	ConsecutiveErrors int       // the new error streak length (0 after a success)
	ErrorsSince       time.Time // the new streak start (zero after a success)
	// HostBackoffUntil is non-zero when the whole host must back off: after a
	// 429, and after a 503 that carries a valid Retry-After (a server-wide
	// "come back later", usually maintenance or overload).
	HostBackoffUntil time.Time
	Penalty          bool // the interval is an error penalty
}

// Schedule decides when a feed is polled next, from its history, the result
// of the poll that just ended, the current time and a random number jitter in
// [0, 1). It is a pure function: no I/O, no clock, no randomness of its own.
//
// The rules (DESIGN.md), in order:
//
//  1. Success (200, same-hash 200, 304) with an active WebSub subscription:
//     a weekly backup poll.
//  2. Success with Cache-Control max-age or Expires (see Freshness): that
//     interval, capped at 24 h.
//  3. Success otherwise, by default: 5 min if the feed answered in < 1 s and
//     has an ETag or Last-Modified; 15 min if only one of the two holds;
//     1 h if neither.
//  4. The floor: 5 min if fast and has a validator, otherwise 15 min. An
//     error response never earns the 5-minute floor.
//  5. Errors: 404 → 24 h; 403 and 500–599 → 4 h; 429, and 503 with a valid
//     Retry-After → Retry-After (capped at 7 days; a 429 without one → 4 h)
//     and HostBackoffUntil (at least 1 min for a 429, never for a 503 without
//     Retry-After); any other status and every Failure → 1 h, 2 h, 4 h, 8 h,
//     16 h, then 24 h, doubling with the streak. A Retry-After on any other
//     error status is honoured too when it asks for more than the penalty.
//     410 → State "gone". An error while the streak started ≥ 90 days ago →
//     "blacklisted" (410 stays "gone"). With WebSub active an error waits at
//     least the weekly backup interval as well.
//  6. Every outcome: a feed without a new item for over a month
//     (365.25/12 days) waits at least 12 h per year of inactivity,
//     continuously (one month → 1 h, six months → 6 h), capped at 24 h from
//     two years on. Inactivity counts from LastNewItemAt, else FirstSeenAt;
//     a poll that found new items is not inactive.
//  7. Every outcome: the operator's HostMinInterval.
//  8. Jitter: NextPoll = now + Interval + jitter × 10 % of Interval, never
//     earlier. A jitter outside [0, 1) or NaN is clamped into it.
func Schedule(h History, r Result, now time.Time, jitter float64) Decision {
	d := Decision{State: StateActive}
	var p plan
	if r.Kind.success() {
		p = successPlan(h, r, now)
	} else {
		p = errorPlan(h, r, now, &d)
	}

	// Rule 6: inactivity, for every outcome.
	if !(r.Kind.success() && r.NewItems) {
		ref := h.LastNewItemAt
		if ref.IsZero() {
			ref = h.FirstSeenAt
		}
		if !ref.IsZero() {
			if inactive := now.Sub(ref); inactive > month {
				fl := inactivityFloor(inactive)
				p.atLeast(fl, "inactive for "+ageWords(inactive)+": at least "+words(fl))
			}
		}
	}

	// Rule 7: the operator's minimum for the host.
	if hm := min(h.HostMinInterval, MaxHostMinInterval); hm > 0 {
		p.atLeast(hm, "host minimum interval "+words(hm)+" (operator setting)")
	}

	// Rule 8: jitter, added, never subtracted.
	if math.IsNaN(jitter) || jitter < 0 {
		jitter = 0
	}
	if jitter >= 1 {
		jitter = math.Nextafter(1, 0)
	}
	extra := time.Duration(float64(p.iv) * jitterFraction * jitter)
	if extra < 0 {
		extra = 0
	}

	d.Interval = p.iv
	d.Reason = p.reason
	d.NextPoll = now.Add(p.iv + extra)
	return d
}

// plan is an interval being decided and its reason.
type plan struct {
	iv     time.Duration
	reason string
	isErr  bool
}

// atLeast raises the interval to floor when floor is longer. A success's reason
// is replaced by why (the deciding rule); an error's reason keeps the error
// first and appends why.
func (p *plan) atLeast(floor time.Duration, why string) {
	if floor <= p.iv {
		return
	}
	p.iv = floor
	if p.isErr {
		p.reason += "; " + why
	} else {
		p.reason = why
	}
}

// successPlan applies rules 1–4 to a 200 or 304.
func successPlan(h History, r Result, now time.Time) plan {
	if h.WebSubActive {
		return plan{iv: WebSubBackupInterval, reason: "WebSub active: backup poll weekly"}
	}
	fast := r.Elapsed >= 0 && r.Elapsed < fastResponse
	validator := r.HasETag || r.HasLastModified
	floor := slowFloor
	if fast && validator {
		floor = fastFloor
	}

	if fd, why, ok := Freshness(r.Header, now); ok {
		p := plan{iv: fd, reason: why}
		if p.iv > MaxInterval {
			p.iv = MaxInterval
			p.reason += ", capped at " + words(MaxInterval)
		}
		if p.iv < floor {
			p.iv = floor
			p.reason += ", raised to the " + words(floor) + " floor" + slowWhy(r, fast, validator)
		}
		return p
	}

	iv := slowDefault
	switch {
	case fast && validator:
		iv = fastFloor
	case fast || validator:
		iv = slowFloor
	}
	return plan{iv: iv, reason: "default " + words(iv) + ": " + elapsedWords(r.Elapsed) + " " + validatorWords(r)}
}

// slowWhy explains why a feed gets the 15-minute floor rather than 5 minutes.
func slowWhy(r Result, fast, validator bool) string {
	switch {
	case fast && validator:
		return ""
	case fast:
		return " (no ETag or Last-Modified)"
	case validator:
		return " (" + elapsedWords(r.Elapsed) + ")"
	}
	return " (" + elapsedWords(r.Elapsed) + ", no ETag or Last-Modified)"
}

func elapsedWords(e time.Duration) string {
	if e < 0 {
		return "response time unknown"
	}
	return "answered in " + words(e)
}

func validatorWords(r Result) string {
	switch {
	case r.HasETag && r.HasLastModified:
		return "with ETag and Last-Modified"
	case r.HasETag:
		return "with ETag"
	case r.HasLastModified:
		return "with Last-Modified"
	}
	return "without ETag or Last-Modified"
}

// errorPlan applies rule 5 and fills the error fields of d.
func errorPlan(h History, r Result, now time.Time, d *Decision) plan {
	n := max(h.ConsecutiveErrors, 0)
	if n < math.MaxInt32 {
		n++
	}
	since := h.ErrorsSince
	if since.IsZero() || since.After(now) {
		since = now
	}
	d.ConsecutiveErrors, d.ErrorsSince, d.Penalty = n, since, true
	streak := " (" + ordinal(n) + " consecutive error)"

	// Retry-After: a date is measured against the server's own Date when it
	// sent one (immune to clock skew, like Expires − Date), else against now.
	var ra time.Duration
	var raOK bool
	var raWords string
	if v, found := firstHeader(r.Header, "Retry-After"); found {
		ref := now
		if dv, ok := firstHeader(r.Header, "Date"); ok {
			if t, err := parseHTTPDate(dv); err == nil {
				ref = t
			}
		}
		if ra, raOK = ParseRetryAfter(v, ref); raOK {
			if isRetryAfterSeconds(v) {
				raWords = strconv.FormatInt(int64(ra/time.Second), 10) + " s"
			} else if ra == 0 {
				raWords = "date already passed"
			} else {
				raWords = words(ra)
			}
			if ra > MaxRetryAfter {
				ra = MaxRetryAfter
				raWords += ", capped at " + words(MaxRetryAfter)
			}
		}
	}

	p := plan{isErr: true}
	hostBackoff := false
	if r.Kind == HTTPError {
		label := "HTTP error"
		if r.Status > 0 {
			label = strconv.Itoa(r.Status)
		}
		switch {
		case r.Status == http.StatusGone:
			d.State = StateGone
			p.iv, p.reason = MaxInterval, "410 Gone: polling stopped"+streak
		case r.Status == http.StatusNotFound:
			p.iv, p.reason = notFoundPenalty, label+": penalty "+words(notFoundPenalty)+streak
		case r.Status == http.StatusForbidden:
			p.iv, p.reason = statusPenalty, label+": penalty "+words(statusPenalty)+streak
		case r.Status == http.StatusTooManyRequests && !raOK:
			hostBackoff = true
			p.iv, p.reason = statusPenalty, label+" without Retry-After: penalty "+words(statusPenalty)+streak
		case r.Status == http.StatusTooManyRequests, r.Status == http.StatusServiceUnavailable && raOK:
			hostBackoff = true
			p.iv, p.reason = ra, label+": Retry-After "+raWords+streak
		case r.Status >= 500 && r.Status <= 599:
			p.iv, p.reason = statusPenalty, label+": penalty "+words(statusPenalty)+streak
		default:
			iv := growingPenalty(n)
			p.iv, p.reason = iv, label+": penalty "+words(iv)+streak
		}
		if hostBackoff {
			d.HostBackoffUntil = now.Add(max(p.iv, minHostBackoff))
		} else if raOK && d.State != StateGone && ra > p.iv {
			p.iv = ra
			p.reason += "; Retry-After " + raWords
		}
	} else {
		// Failure, or an unknown kind.
		iv := growingPenalty(n)
		p.iv, p.reason = iv, failureLabel(r.Failure)+": penalty "+words(iv)+streak
	}

	p.atLeast(slowFloor, "raised to the "+words(slowFloor)+" floor")

	if d.State != StateGone && !h.ErrorsSince.IsZero() && !h.ErrorsSince.After(now) &&
		now.Sub(h.ErrorsSince) >= BlacklistAfter {
		d.State = StateBlacklisted
		p.reason = "blacklisted after " + words(now.Sub(h.ErrorsSince)) + " of nothing but errors; last: " + p.reason
	}

	if h.WebSubActive {
		p.atLeast(WebSubBackupInterval, "WebSub active: backup poll weekly")
	}
	return p
}

// growingPenalty is 1 h for the first error in a row, doubling with each
// further one, capped at MaxInterval: 1, 2, 4, 8, 16, 24, 24 … hours.
func growingPenalty(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 6 {
		return MaxInterval
	}
	return min(firstPenalty<<(n-1), MaxInterval)
}

// inactivityFloor is 12 h per year of inactivity (inactive / 730.5),
// reaching MaxInterval at two years and capped there.
func inactivityFloor(inactive time.Duration) time.Duration {
	if inactive >= inactiveFullYear {
		return MaxInterval
	}
	// 12 h / 365.25 days = 2 / 1461, exact in integer nanoseconds.
	return inactive * 2 / 1461
}

// maxFailureLabel bounds how much of a failure description goes into a
// public reason.
const maxFailureLabel = 120

// failureLabel makes a Failure description fit for a one-line public reason:
// control characters become spaces, runs of spaces collapse, and it is cut
// at maxFailureLabel characters. Empty becomes "failure".
func failureLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(c rune) bool {
		return unicode.IsSpace(c) || unicode.IsControl(c)
	}), " ")
	if s == "" {
		return "failure"
	}
	if utf8.RuneCountInString(s) > maxFailureLabel {
		s = string([]rune(s)[:maxFailureLabel]) + "…"
	}
	return s
}

// ordinal returns n with its English suffix: 1st, 2nd, 3rd, 4th, 11th, 12th,
// 13th, 21st, 101st, 111th.
func ordinal(n int) string {
	suffix := "th"
	if r := n % 100; r < 11 || r > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// words renders a duration in plain words for reasons: "120 ms", "1.25 s",
// "90 s", "15 min", "12 min 30 s", "6 h", "1 h 1 min", "36 h", "7 days",
// "92 days 3 h". Under 2 min a duration that is not whole minutes stays in
// seconds; under 48 h whole hours are not turned into days.
func words(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			d++
		}
		return "-" + words(-d)
	}
	itoa := func(v time.Duration) string { return strconv.FormatInt(int64(v), 10) }
	switch {
	case d == 0:
		return "0 s"
	case d < time.Second:
		return itoa(d/time.Millisecond) + " ms"
	case d < time.Minute:
		s := d.Round(10 * time.Millisecond).Seconds()
		return strconv.FormatFloat(s, 'f', -1, 64) + " s"
	case d < 2*time.Minute && d%time.Minute != 0:
		return itoa(d.Round(time.Second)/time.Second) + " s"
	case d < time.Hour:
		r := d.Round(time.Second)
		if r%time.Minute == 0 {
			return itoa(r/time.Minute) + " min"
		}
		return itoa(r/time.Minute) + " min " + itoa(r%time.Minute/time.Second) + " s"
	case d < 48*time.Hour:
		r := d.Round(time.Minute)
		if r%time.Hour == 0 {
			return itoa(r/time.Hour) + " h"
		}
		return itoa(r/time.Hour) + " h " + itoa(r%time.Hour/time.Minute) + " min"
	}
	r := d.Round(time.Hour)
	days, hours := r/(24*time.Hour), r%(24*time.Hour)/time.Hour
	if hours == 0 {
		return itoa(days) + " days"
	}
	return itoa(days) + " days " + itoa(hours) + " h"
}

// ageWords renders how long a feed has been quiet: days under 61 days,
// months (of 365.25/12 days) under two years, then years to one decimal.
func ageWords(d time.Duration) string {
	if d < 61*24*time.Hour {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " days"
	}
	if months := math.Round(float64(d) / float64(month)); months < 24 {
		return strconv.FormatFloat(months, 'f', 0, 64) + " months"
	}
	years := math.Round(float64(d)/float64(year)*10) / 10
	return strconv.FormatFloat(years, 'f', -1, 64) + " years"
}
