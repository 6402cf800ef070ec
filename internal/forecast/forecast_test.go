package forecast

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

// every returns n dates, step apart, the newest at last.
func every(last time.Time, step time.Duration, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = last.Add(-time.Duration(n-1-i) * step)
	}
	return out
}

func join(parts ...[]time.Time) []time.Time {
	var out []time.Time
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const day = 24 * time.Hour

func TestEstimate(t *testing.T) {
	steady := every(at("2025-03-01 09:00"), day, 20)
	tests := []struct {
		name  string
		dates []time.Time
		// want: credits for instant, daily, weekly, twice-daily; or the
		// reason's words when not enough history.
		instant, daily, weekly, twice int
		posts                         float64 // posts a month, ±0.05
		notEnough                     string
		capped                        bool
	}{
		// 19 posts after the oldest in 19 d 3 h: 30.2 a month; every
		// daily issue has news, every other twice-daily one; the weekly
		// replay has 1 slot, so Poisson: each week surely has news.
		{name: "steady daily poster", dates: steady, posts: 30.24,
			instant: 30, daily: 30, weekly: 4, twice: 30},
		// Wednesdays for 9 weeks: every Monday issue has news; 9 of 65 daily.
		{name: "weekly poster", dates: every(at("2025-02-26 10:00"), 7*day, 10), posts: 4.15,
			instant: 4, daily: 4, weekly: 4, twice: 4},
		// Two bursts of 5 six weeks apart: the rate says 4.6 posts a month,
		// but burst protection charges the first post of the second burst
		// only (the first burst starts the window: its head is not
		// counted), 1 a month; the replay sees one daily issue with news
		// in 58 (0.52 a month: still "about 1", not 0) and one weekly in 7.
		{name: "bursty", dates: join(every(at("2025-01-01 12:00"), time.Hour, 5), every(at("2025-02-15 12:00"), time.Hour, 5)),
			posts: 4.63, instant: 1, daily: 1, weekly: 1, twice: 1},
		{name: "future dates ignored", dates: join(steady, every(at("2026-01-01 00:00"), day, 30), []time.Time{now.Add(time.Minute)}),
			posts: 30.24, instant: 30, daily: 30, weekly: 4, twice: 30},
		{name: "undated", dates: make([]time.Time, 30), notEnough: "fewer than 3"},
		{name: "no items", notEnough: "fewer than 3"},
		{name: "too few dated", dates: join(make([]time.Time, 10), every(at("2025-02-01 09:00"), 7*day, 2)),
			notEnough: "fewer than 3"},
		{name: "too few once the future is left out", dates: join(every(at("2025-02-01 09:00"), 7*day, 2), every(at("2025-06-01 09:00"), day, 5)),
			notEnough: "fewer than 3"},
		{name: "one day", dates: every(at("2025-02-20 23:00"), time.Hour, 24), notEnough: "within one day"},
		{name: "one day across midnight", dates: every(at("2025-02-21 04:00"), time.Hour, 9), notEnough: "within one day"},
		{name: "all in the last hour", dates: every(now, time.Minute, 60), notEnough: "within one day"},
		{name: "same date on every item", dates: every(at("2025-02-20 10:00"), 0, 20), notEnough: "within one day"},
		// 400 posts in 25 h is 11,700 a month: capped; every digest
		// issue has news.
		{name: "absurd rate capped", dates: every(now, 225*time.Second, 401), posts: MaxPostsPerMonth, capped: true,
			instant: 3000, daily: 30, weekly: 4, twice: 61},
		// Ten daily posts a year ago: the silence since counts (a weekly
		// digest had news in 1 issue of 52).
		{name: "stopped a year ago", dates: every(at("2024-03-01 09:00"), day, 10), posts: 0.74,
			instant: 1, daily: 1, weekly: 0, twice: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Estimate(tt.dates, presets, now)
			if tt.notEnough != "" {
				if !f.NotEnoughHistory || !strings.Contains(f.Reason, tt.notEnough) {
					t.Fatalf("got %+v; want not enough history: %q", f, tt.notEnough)
				}
				if w := f.Words("instant"); w != "not enough history to tell the cost" {
					t.Errorf("Words = %q", w)
				}
				return
			}
			if f.NotEnoughHistory {
				t.Fatalf("not enough history: %s", f.Reason)
			}
			if math.Abs(f.PostsPerMonth-tt.posts) > 0.05 || f.Capped != tt.capped {
				t.Errorf("posts a month %.3f capped %v; want %.2f %v", f.PostsPerMonth, f.Capped, tt.posts, tt.capped)
			}
			got := map[string]int{}
			for _, k := range []string{"instant", "daily", "weekly", "twice-daily"} {
				c, ok := f.For(k)
				if !ok {
					t.Fatalf("no forecast for %q", k)
				}
				got[k] = c.Credits
			}
			want := map[string]int{"instant": tt.instant, "daily": tt.daily, "weekly": tt.weekly, "twice-daily": tt.twice}
			for k, w := range want {
				if got[k] != w {
					c, _ := f.For(k)
					t.Errorf("%s: %d credits (expected %.3f); want %d", k, got[k], c.Expected, w)
				}
			}
			if f.Instant.AtLeast != tt.capped {
				t.Errorf("instant AtLeast %v; want %v", f.Instant.AtLeast, tt.capped)
			}
		})
	}
}

func TestEstimateCoversEveryPreset(t *testing.T) {
	f := Estimate(every(at("2025-03-01 09:00"), day, 20), presets, now)
	ps := digest.Presets()
	if len(f.Digests) != len(ps) {
		t.Fatalf("%d digest forecasts for %d presets", len(f.Digests), len(ps))
	}
	for i, p := range ps {
		if f.Digests[i].Preset.Key != p.Key {
			t.Errorf("forecast %d is %q; want %q", i, f.Digests[i].Preset.Key, p.Key)
		}
	}
	if _, ok := f.For("hourly"); ok {
		t.Error(`For("hourly") found a forecast`)
	}
}

// TestDigestCostSharesIssues: one credit pays for five feeds with news.
func TestDigestCostSharesIssues(t *testing.T) {
	daily, err := digest.ParseSchedule("daily", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	steady := Read(every(at("2025-03-01 09:00"), day, 20), now)
	quiet := Read(every(at("2025-02-26 10:00"), 7*day, 10), now)
	many := func(h History, n int) []History {
		out := make([]History, n)
		for i := range out {
			out[i] = h
		}
		return out
	}
	tests := []struct {
		name  string
		feeds []History
		want  int
	}{
		{"none", nil, 0},
		{"one steady", many(steady, 1), 30},
		{"five steady", many(steady, 5), 30},
		// A feed with 30.2 posts a month has news in at most 30.2 of the
		// 30.4 daily issues: six of them fill two credits' worth 99% of days.
		{"six steady", many(steady, 6), 60},
		{"unknown feeds left out", append(many(steady, 1), Read(nil, now)), 30},
		// Each has news in 9 of 65 issues: 3 quiet feeds have some in
		// 1 − (56/65)³ = 36% of them.
		{"three quiet", many(quiet, 3), 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DigestCost(tt.feeds, daily, now); got.Credits != tt.want {
				t.Errorf("%d credits (%.3f); want %d", got.Credits, got.Expected, tt.want)
			}
		})
	}
}

// TestDigestCostFrequentSchedule: "@every 10s" is averaged over its first
// slots, not walked for a year.
func TestDigestCostFrequentSchedule(t *testing.T) {
	s, err := digest.ParseSchedule("@every 10s", "")
	if err != nil {
		t.Fatal(err)
	}
	h := Read(every(at("2025-03-01 09:00"), day, 20), now)
	c := DigestCost([]History{h}, s, now)
	// About one issue per post: a little under 30.
	if c.Credits < 29 || c.Credits > 31 {
		t.Errorf("%d credits (%.2f); want about 30", c.Credits, c.Expected)
	}
}

func TestRound(t *testing.T) {
	tests := []struct {
		x    float64
		want int
	}{
		{0, 0}, {0.49, 0}, {0.5, 1}, {1.49, 1}, {9.5, 10}, {30.44, 30}, {99.4, 99},
		{99.6, 100}, {147, 150}, {912, 910}, {3044, 3000}, {12345, 12000}, {math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := Round(tt.x); got != tt.want {
			t.Errorf("Round(%v) = %d; want %d", tt.x, got, tt.want)
		}
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		c    Cost
		want string
	}{
		{newCost(0.3, false), "less than 1 credit a month"},
		{newCost(0.5, false), "about 1 credit a month"},
		{newCost(30.44, false), "about 30 credits a month"},
		{newCost(1234, false), "about 1,200 credits a month"},
		{newCost(3000, true), "more than 3,000 credits a month"},
	}
	for _, tt := range tests {
		if got := tt.c.Words(); got != tt.want {
			t.Errorf("%+v: %q; want %q", tt.c, got, tt.want)
		}
	}
	for _, tt := range []struct {
		f    Forecast
		want string
	}{
		{Forecast{PostsPerMonth: 30.2}, "about 30 posts a month"},
		{Forecast{PostsPerMonth: 0.7}, "about 1 post a month"},
		{Forecast{PostsPerMonth: 0.2}, "less than 1 post a month"},
		{Forecast{PostsPerMonth: MaxPostsPerMonth, Capped: true}, "more than 3,000 posts a month"},
		{Forecast{NotEnoughHistory: true}, "not enough history to tell how often it posts"},
	} {
		if got := tt.f.PostsWords(); got != tt.want {
			t.Errorf("%+v: %q; want %q", tt.f, got, tt.want)
		}
	}
	if got := Thousands(1234567); got != "1,234,567" {
		t.Errorf("Thousands = %q", got)
	}
	if got := Thousands(-1000); got != "-1,000" {
		t.Errorf("Thousands = %q", got)
	}
}
