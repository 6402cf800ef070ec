package billing

import (
	"testing"
	"time"
)

// TestSeedRate: which published dates seed a feed's rate, and what the
// seed says about a steady daily feed.
func TestSeedRate(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	daily := func(n int) []time.Time {
		var out []time.Time
		for i := range n {
			out = append(out, now.Add(-4*time.Hour-time.Duration(i)*day))
		}
		return out
	}
	same := now.Add(-time.Hour)
	tests := []struct {
		name   string
		dates  []time.Time
		ok     bool
		perDay [2]float64 // bounds of PerDay(now) when ok
	}{
		{"none", nil, false, [2]float64{}},
		{"one date", []time.Time{same}, false, [2]float64{}},
		{"all identical", []time.Time{same, same, same, same}, false, [2]float64{}},
		{"all in the future", []time.Time{now.Add(time.Hour), now.Add(2 * time.Hour)}, false, [2]float64{}},
		{"one past, the rest in the future", []time.Time{same, now.Add(day), now.Add(2 * day)}, false, [2]float64{}},
		{"zero dates do not count", []time.Time{{}, same, {}}, false, [2]float64{}},
		{"two dates are one gap, no pace", daily(2), false, [2]float64{}},
		{"three dates", daily(3), true, [2]float64{0.5, 1.5}},
		{"ten daily posts", daily(10), true, [2]float64{0.8, 1.2}},
		{"thirty daily posts, a future one ignored", append(daily(30), now.Add(3*day)), true, [2]float64{0.8, 1.2}},
		{"in any order", reversed(daily(10)), true, [2]float64{0.8, 1.2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := SeedRate(tt.dates, now)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, r)
			}
			if !ok {
				if r != (FeedRate{}) {
					t.Errorf("no seed but a rate %+v", r)
				}
				return
			}
			if a := r.PerDay(now); a < tt.perDay[0] || a > tt.perDay[1] {
				t.Errorf("PerDay = %.2f, want %.1f–%.1f", a, tt.perDay[0], tt.perDay[1])
			}
			if r.At.After(now) || r.Since.After(r.At) {
				t.Errorf("at %v since %v", r.At, r.Since)
			}
		})
	}
}

func reversed(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[len(ts)-1-i] = t
	}
	return out
}

// TestSeedRateFirstDayBurst: a daily feed whose first poll shows ten days
// of one post a day bursts 15 posts in an hour the next morning, its first
// day on feedmail: seeded, the burst costs 1; unseeded, all 15.
func TestSeedRateFirstDayBurst(t *testing.T) {
	firstPoll := time.Date(2026, 3, 10, 22, 0, 0, 0, time.UTC)
	var dates []time.Time
	for i := range 10 {
		dates = append(dates, time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC).Add(-time.Duration(i)*day))
	}
	seeded, ok := SeedRate(dates, firstPoll)
	if !ok {
		t.Fatal("ten daily dates gave no seed")
	}
	burst := func(r FeedRate) (charged int) {
		start := firstPoll.Add(6 * time.Hour)
		for i := range 15 {
			var b []bool
			r, b = r.Update(start.Add(time.Duration(i)*4*time.Minute), 1)
			if !b[0] {
				charged++
			}
		}
		return charged
	}
	if got := burst(seeded); got != 1 {
		t.Errorf("seeded: the burst charged %d posts, want 1", got)
	}
	if got := burst(FeedRate{}); got != 15 {
		t.Errorf("unseeded: the burst charged %d posts, want 15 (the first day charges all)", got)
	}
}
