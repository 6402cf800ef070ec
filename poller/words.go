package poller

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
