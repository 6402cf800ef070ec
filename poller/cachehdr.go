package poller

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxDeltaSeconds is the value RFC 9111 §1.2.2 tells a cache to use for a
// delta-seconds value it cannot represent (2^31 seconds, about 68 years).
const maxDeltaSeconds = 2147483648

// Freshness reports how long a response stays fresh according to its
// caching headers (RFC 9111 §4.2.1), measured from when it was received,
// and the source in words for the status page ("Cache-Control
// max-age=900 minus Age 100", "Expires − Date = 2 h"). The first max-age
// wins over Expires − Date (Date missing: now); Age is subtracted from
// either, clamped at 0, so max-age=0 is ok with d = 0. An Expires that is
// invalid or not after Date, or no max-age nor Expires, gives ok false.
// s-maxage, no-cache, no-store, must-revalidate and Pragma are ignored.
// Parsing is lenient (any case, quoted values, ';' as a separator). The
// 24-hour cap is Schedule's job.
func Freshness(h http.Header, now time.Time) (d time.Duration, reason string, ok bool) {
	age, hasAge := headerAge(h)

	if maxAge, found := cacheControlMaxAge(h); found {
		d = time.Duration(maxAge) * time.Second
		reason = "Cache-Control max-age=" + strconv.FormatInt(maxAge, 10)
		if hasAge && age > 0 {
			reason += " minus Age " + strconv.FormatInt(age, 10)
			d -= time.Duration(age) * time.Second
			if d < 0 {
				d = 0
			}
		}
		return d, reason, true
	}

	expRaw, found := firstHeader(h, "Expires")
	if !found {
		return 0, "", false
	}
	expires, err := parseHTTPDate(expRaw)
	if err != nil {
		return 0, "", false
	}
	date := now
	if dateRaw, found := firstHeader(h, "Date"); found {
		if t, err := parseHTTPDate(dateRaw); err == nil {
			date = t
		}
	}
	lifetime := expires.Sub(date)
	if lifetime <= 0 {
		return 0, "", false
	}
	reason = "Expires − Date = " + words(lifetime)
	d = lifetime
	if hasAge && age > 0 {
		reason += " minus Age " + strconv.FormatInt(age, 10)
		d -= time.Duration(age) * time.Second
		if d < 0 {
			d = 0
		}
	}
	return d, reason, true
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): either
// delta-seconds ("120") or an HTTP date in any of the three formats
// http.ParseTime accepts. It returns how long to wait from now.
//
// Negative numbers, fractions, empty values and garbage return false. A date
// in the past returns 0, true: the server asked for nothing beyond what we
// would do anyway. Seconds above 2^31 are read as 2^31 (RFC 9111 §1.2.2).
// Surrounding spaces and quotes are tolerated, and dates are also accepted in
// upper or lower case, with runs of spaces, or with a numeric zone
// ("+0000") instead of GMT.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = unquote(strings.TrimSpace(v))
	if v == "" {
		return 0, false
	}
	if secs, ok := parseDeltaSeconds(v); ok {
		return time.Duration(secs) * time.Second, true
	}
	t, err := parseHTTPDate(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return d, true
}

// isRetryAfterSeconds reports whether a Retry-After value is in the
// delta-seconds form (used to word reasons the way the server put it).
func isRetryAfterSeconds(v string) bool {
	_, ok := parseDeltaSeconds(unquote(strings.TrimSpace(v)))
	return ok
}

// cacheControlMaxAge returns the first max-age directive with its value in
// seconds. found is false when there is none, or the first one is invalid.
func cacheControlMaxAge(h http.Header) (secs int64, found bool) {
	for _, line := range headerValues(h, "Cache-Control") {
		for _, member := range splitDirectives(line) {
			name, value, _ := strings.Cut(member, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "max-age" {
				continue
			}
			// The first max-age decides, valid or not.
			return parseDeltaSeconds(unquote(strings.TrimSpace(value)))
		}
	}
	return 0, false
}

// headerAge returns the Age header in seconds (first value, first list
// member); ok is false when absent or not a plain number.
func headerAge(h http.Header) (int64, bool) {
	v, found := firstHeader(h, "Age")
	if !found {
		return 0, false
	}
	first, _, _ := strings.Cut(v, ",")
	return parseDeltaSeconds(unquote(strings.TrimSpace(first)))
}

// splitDirectives splits a Cache-Control line on ',' and ';' outside quoted
// strings and drops empty members.
func splitDirectives(line string) []string {
	var out []string
	inQuote, escaped := false, false
	start := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case inQuote && c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case !inQuote && (c == ',' || c == ';'):
			if m := strings.TrimSpace(line[start:i]); m != "" {
				out = append(out, m)
			}
			start = i + 1
		}
	}
	if m := strings.TrimSpace(line[start:]); m != "" {
		out = append(out, m)
	}
	return out
}

// parseDeltaSeconds parses 1*DIGIT, saturating at 2^31.
func parseDeltaSeconds(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < maxDeltaSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	if n > maxDeltaSeconds {
		n = maxDeltaSeconds
	}
	return n, true
}

// unquote removes one pair of surrounding double quotes, if present.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return strings.TrimSpace(v[1 : len(v)-1])
	}
	return v
}

// headerValues returns every value of the named header, matching the name
// case-insensitively so that hand-built (non-canonical) maps work too.
// Canonical keys come first, in the order they were received.
func headerValues(h http.Header, name string) []string {
	if h == nil {
		return nil
	}
	vals := h[http.CanonicalHeaderKey(name)]
	for k, vs := range h {
		if k != http.CanonicalHeaderKey(name) && strings.EqualFold(k, name) {
			vals = append(vals[:len(vals):len(vals)], vs...)
		}
	}
	return vals
}

// firstHeader returns the first non-blank value of the named header.
func firstHeader(h http.Header, name string) (string, bool) {
	for _, v := range headerValues(h, name) {
		if v = strings.TrimSpace(v); v != "" {
			return v, true
		}
	}
	return "", false
}

// extraDateLayouts are accepted after the three http.ParseTime formats fail:
// RFC 1123 with a numeric zone, which some servers send.
var extraDateLayouts = [...]string{time.RFC1123Z, "Mon, _2 Jan 2006 15:04:05 -0700"}

// parseHTTPDate parses an HTTP date leniently: first exactly as
// http.ParseTime does, then with quotes removed, spaces collapsed and the
// text upper-cased (month and day names match case-insensitively, "GMT" must
// be upper case), then RFC 1123 with a numeric zone. The result is in UTC.
func parseHTTPDate(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t.UTC(), nil
	}
	norm := strings.ToUpper(strings.Join(strings.Fields(unquote(strings.TrimSpace(v))), " "))
	if t, err := http.ParseTime(norm); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range extraDateLayouts {
		if t, err := time.Parse(layout, norm); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("poller: not an HTTP date: %q", v)
}
