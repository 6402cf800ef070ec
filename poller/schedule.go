package poller

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/store"
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
	// Refused: this installation's own setting refused the address (a
	// private or local network while FEEDMAIL_ALLOW_PRIVATE_NETWORKS is
	// off). Not the publisher's doing: no penalty, no error streak.
	Refused
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
	case Refused:
		return "refused"
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

// Intervals and limits of the schedule (docs/design.md, "Polling interval" and
// "Errors").
const (
	// MaxInterval caps the interval taken from caching headers, the growing
	// error penalty and the inactivity floor: every active feed that is not
	// on WebSub, not rate-limited and not slowed by its operator is looked at
	// at least daily.
	MaxInterval = 24 * time.Hour
	// WebSubBackupInterval is the backup poll of a feed with an active WebSub
	// subscription (the callback also puts a feed's next poll off to it when
	// a subscription is verified: store.WebSubBackupAt).
	WebSubBackupInterval = store.WebSubBackupInterval
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
	firstPollJitter  = 1.0              // up to +100 % after a first poll
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
	// FirstPoll: no poll of the feed was recorded before this one.
	FirstPoll bool
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
// The rules (docs/design.md), in order:
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
//     A refusal by this installation's own setting (Refused) is not an
//     error: the streak is left as it was and the feed is tried again in
//     RefusedRetry (the poller makes such feeds due at once when it starts
//     with the setting changed).
//  6. Every outcome: a feed without a new item for over a month
//     (365.25/12 days) waits at least 12 h per year of inactivity,
//     continuously (one month → 1 h, six months → 6 h), capped at 24 h from
//     two years on. Inactivity counts from LastNewItemAt, else FirstSeenAt;
//     a poll that found new items is not inactive.
//  7. Every outcome: the operator's HostMinInterval.
//  8. Jitter: NextPoll = now + Interval + jitter × 10 % of Interval, never
//     earlier; after a feed's first poll, when it succeeded, jitter × the
//     whole Interval, so
//     that feeds added together (an import) and polled together do not
//     stay in step. A jitter outside [0, 1) or NaN is clamped into it.
func Schedule(h History, r Result, now time.Time, jitter float64) Decision {
	d := Decision{State: StateActive}
	var p plan
	switch {
	case r.Kind.success():
		p = successPlan(h, r, now)
	case r.Kind == Refused:
		p = refusedPlan(h, &d)
	default:
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
	frac := jitterFraction
	if h.FirstPoll && r.Kind.success() {
		frac = firstPollJitter
	}
	extra := time.Duration(float64(p.iv) * frac * jitter)
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

// inactivityFloor is 12 h per year of inactivity (inactive / 730.5),
// reaching MaxInterval at two years and capped there.
func inactivityFloor(inactive time.Duration) time.Duration {
	if inactive >= inactiveFullYear {
		return MaxInterval
	}
	// 12 h / 365.25 days = 2 / 1461, exact in integer nanoseconds.
	return inactive * 2 / 1461
}

// RefusedRetry is how long a feed refused by this installation's own
// setting waits before it is tried again.
const RefusedRetry = time.Hour

// RefusedReasonPrefix starts the reason of a feed refused by this
// installation's own setting; the poller finds such feeds by it when it
// starts with private networks allowed.
const RefusedReasonPrefix = "refused by this installation's settings"

// refusedPlan is rule 5's exception: no penalty and the streak unchanged.
func refusedPlan(h History, d *Decision) plan {
	d.ConsecutiveErrors, d.ErrorsSince = h.ConsecutiveErrors, h.ErrorsSince
	return plan{iv: RefusedRetry, reason: RefusedReasonPrefix +
		": a private or local network address, not visited unless FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; no penalty, tried again in " +
		words(RefusedRetry)}
}
