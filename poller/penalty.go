package poller

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

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

	var p plan
	if r.Kind == HTTPError {
		p = statusPlan(r, now, n, streak, d)
	} else {
		// Failure, or an unknown kind.
		iv := growingPenalty(n)
		p = plan{iv: iv, reason: failureLabel(r.Failure) + ": penalty " + words(iv) + streak, isErr: true}
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

// statusPlan is the penalty of an error status, the n-th error in a row:
// it sets d.State for a 410 and d.HostBackoffUntil for a 429, or a 503
// with a Retry-After. A Retry-After on any other status is honoured when
// it asks for more than the penalty.
func statusPlan(r Result, now time.Time, n int, streak string, d *Decision) plan {
	ra, raOK, raWords := retryAfter(r.Header, now)
	p := plan{isErr: true}
	label := "HTTP error"
	if r.Status > 0 {
		label = strconv.Itoa(r.Status)
	}
	hostBackoff := false
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
	return p
}

// retryAfter reads the Retry-After of an answer: the wait (capped at
// MaxRetryAfter), whether there was a valid one, and the wait in words
// (seconds as given, else a duration). A date is measured against the
// server's own Date when it sent a valid one (immune to clock skew, like
// Expires − Date), else against now.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool, string) {
	v, found := firstHeader(h, "Retry-After")
	if !found {
		return 0, false, ""
	}
	ref := now
	if dv, ok := firstHeader(h, "Date"); ok {
		if t, err := parseHTTPDate(dv); err == nil {
			ref = t
		}
	}
	ra, ok := ParseRetryAfter(v, ref)
	if !ok {
		return ra, false, ""
	}
	var raWords string
	switch {
	case isRetryAfterSeconds(v):
		raWords = strconv.FormatInt(int64(ra/time.Second), 10) + " s"
	case ra == 0:
		raWords = "date already passed"
	default:
		raWords = words(ra)
	}
	if ra > MaxRetryAfter {
		ra = MaxRetryAfter
		raWords += ", capped at " + words(MaxRetryAfter)
	}
	return ra, true, raWords
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
