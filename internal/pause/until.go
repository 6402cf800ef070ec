// Package pause reads when a reader's pause ends, as they write it on the
// command line or the account page. It is pure: it does no I/O and keeps
// no state; the store owns the pause itself.
package pause

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrBadUntil is returned by ParseUntil for text it cannot read.
var ErrBadUntil = errors.New(`use a date (2026-12-24), a time (2026-12-24T08:00:00Z) or a duration (14d, 2w, 36h)`)

// ErrPast is returned by ParseUntil for an end that is not after now.
var ErrPast = errors.New("that is not in the future")

// ParseUntil returns when a pause written as s ends, seen at now in the
// reader's time zone loc:
//
//   - "" is no end (nil): until resumed;
//   - an RFC 3339 time is that instant;
//   - a date "2026-12-24" is the start of that day in loc (the reader is
//     back that day);
//   - a duration "14d", "2w", "36h" or "90m" (a whole number and one of
//     m, h, d, w; a day is 24 hours) is that long after now.
//
// An end not after now is ErrPast; anything else unreadable ErrBadUntil.
func ParseUntil(s string, now time.Time, loc *time.Location) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	end, err := parse(s, now, loc)
	if err != nil {
		return nil, fmt.Errorf("until %q: %w", s, err)
	}
	if !end.After(now) {
		return nil, fmt.Errorf("until %q: %w", s, ErrPast)
	}
	end = end.UTC()
	return &end, nil
}

// parse reads s as one of ParseUntil's forms.
func parse(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	units := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	unit, ok := units[s[len(s)-1]]
	if !ok || len(s) < 2 {
		return time.Time{}, ErrBadUntil
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 || s[0] == '+' || int64(n) > int64(10*365*24*time.Hour/unit) {
		return time.Time{}, ErrBadUntil
	}
	return now.Add(time.Duration(n) * unit), nil
}
