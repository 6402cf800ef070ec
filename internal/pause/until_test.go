package pause

import (
	"errors"
	"testing"
	"time"
)

func TestParseUntil(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone data")
	}
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want string // RFC 3339 in UTC; "" for no end
		err  error
	}{
		{"", nil, "", nil},
		{"   ", nil, "", nil},
		{"2026-12-24", nil, "2026-12-24T00:00:00Z", nil},
		{"2026-12-24", paris, "2026-12-23T23:00:00Z", nil},
		{"2026-12-24T08:30:00+02:00", paris, "2026-12-24T06:30:00Z", nil},
		{"14d", nil, "2026-12-09T12:00:00Z", nil},
		{"2w", nil, "2026-12-09T12:00:00Z", nil},
		{"36h", nil, "2026-11-27T00:00:00Z", nil},
		{"90m", nil, "2026-11-25T13:30:00Z", nil},
		{" 1d ", nil, "2026-11-26T12:00:00Z", nil},
		{"2026-11-25", nil, "", ErrPast},
		{"2026-11-24", nil, "", ErrPast},
		{"2026-11-25T12:00:00Z", nil, "", ErrPast},
		{"2020-01-01T00:00:00Z", nil, "", ErrPast},
		{"0d", nil, "", ErrBadUntil},
		{"-3d", nil, "", ErrBadUntil},
		{"+3d", nil, "", ErrBadUntil},
		{"3", nil, "", ErrBadUntil},
		{"d", nil, "", ErrBadUntil},
		{"3y", nil, "", ErrBadUntil},
		{"1.5d", nil, "", ErrBadUntil},
		{"99999999999w", nil, "", ErrBadUntil},
		{"tomorrow", nil, "", ErrBadUntil},
		{"2026-13-01", nil, "", ErrBadUntil},
		{"24/12/2026", nil, "", ErrBadUntil},
	} {
		got, err := ParseUntil(tc.in, now, tc.loc)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || got != nil {
				t.Errorf("ParseUntil(%q) = %v, %v; want error %v", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseUntil(%q): %v", tc.in, err)
			continue
		}
		gs := ""
		if got != nil {
			gs = got.Format(time.RFC3339)
		}
		if gs != tc.want {
			t.Errorf("ParseUntil(%q) = %q, want %q", tc.in, gs, tc.want)
		}
	}
}
