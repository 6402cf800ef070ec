package forecast

import (
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/filter"
)

// TestOneFeedDigestNeverAboveInstant: a digest issue carries at least one
// post, so the digest of one feed costs no more than an email per post.
// The case: a feed posting every 3 days said "about 9" for a daily
// digest and 8 for instant.
func TestOneFeedDigestNeverAboveInstant(t *testing.T) {
	feeds := map[string][]time.Time{
		"every 3 days":           every(at("2025-02-28 10:00"), 3*day, 10),
		"every 3 days, 4 posts":  every(at("2025-02-27 18:00"), 3*day, 4), // was instant 8, daily 9
		"every 3 days, 20 posts": every(at("2025-02-27 18:00"), 3*day, 20),
		"every 2 days":           every(at("2025-03-01 08:00"), 2*day, 15),
		"every 36 hours":         every(at("2025-02-28 20:00"), 36*time.Hour, 12),
		"daily":                  every(at("2025-03-01 09:00"), day, 20),
		"twice a day":            every(at("2025-03-01 11:00"), 12*time.Hour, 20),
		"every 5 hours":          every(at("2025-03-01 11:00"), 5*time.Hour, 20),
		"weekly":                 every(at("2025-02-26 10:00"), 7*day, 10),
		"three in three weeks":   {at("2025-02-08 10:00"), at("2025-02-16 10:00"), at("2025-02-27 10:00")},
	}
	for name, dates := range feeds {
		t.Run(name, func(t *testing.T) {
			f := Estimate(dates, presets, now)
			if f.NotEnoughHistory {
				t.Fatalf("not enough history: %s", f.Reason)
			}
			for _, d := range f.Digests {
				if d.Expected > f.Instant.Expected+1e-9 || d.Credits > f.Instant.Credits {
					t.Errorf("%s digest %.3f (%s) > instant %.3f (%s)", d.Preset.Key,
						d.Expected, d.Words(), f.Instant.Expected, f.Instant.Words())
				}
			}
		})
	}
	f := Estimate(feeds["every 3 days, 4 posts"], presets, now)
	daily, _ := f.For("daily")
	if daily.Credits != 8 || f.Instant.Credits != 8 {
		t.Errorf("every 3 days: daily %s, instant %s; want 8 and 8", daily.Words(), f.Instant.Words())
	}
}

// TestDigestAtMostPosts: whatever the feed, a digest of it has news in no
// more issues than it has posts.
func TestDigestAtMostPosts(t *testing.T) {
	feeds := [][]time.Time{
		join(every(at("2025-01-01 12:00"), time.Hour, 5), every(at("2025-02-15 12:00"), time.Hour, 5)),
		every(at("2025-03-01 09:00"), 7*time.Hour, 40),
		every(at("2024-03-01 09:00"), day, 10),
	}
	for i, dates := range feeds {
		f := Estimate(dates, presets, now)
		for _, d := range f.Digests {
			if d.Expected > f.PostsPerMonth+1e-9 {
				t.Errorf("feed %d: %s digest %.3f > %.3f posts a month", i, d.Preset.Key, d.Expected, f.PostsPerMonth)
			}
		}
	}
}

// TestForecastFilters: only the posts a subscription's filters pass are
// sent and charged, and whether the dates tell is judged on all posts.
func TestForecastFilters(t *testing.T) {
	var posts []Post
	for i, d := range every(at("2025-03-01 09:00"), day, 20) {
		title := "Rust news"
		if i%2 == 0 {
			title = "Go news"
		}
		posts = append(posts, Post{Date: d, Title: title, Content: fmt.Sprintf("<p>post %d</p>", i)})
	}
	mustFilter := func(inc, exc string) filter.Filter {
		f, err := filter.New(inc, exc)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tests := []struct {
		name           string
		f              filter.Filter
		instant, daily int
		words          string
	}{
		{"no filter", filter.Filter{}, 30, 30, "about 30 credits a month"},
		// 9 of the 19 posts after the oldest pass: 14.3 a month.
		{"include go", mustFilter("go", ""), 14, 14, "about 14 credits a month"},
		{"exclude go", mustFilter("", "go"), 16, 15, "about 16 credits a month"},
		{"nothing passes", mustFilter("python", ""), 0, 0, "less than 1 credit a month"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := EstimatePosts(posts, tt.f, presets, now)
			if fc.NotEnoughHistory {
				t.Fatalf("not enough history: %s", fc.Reason)
			}
			d, _ := fc.For("daily")
			if fc.Instant.Credits != tt.instant || d.Credits != tt.daily || fc.Words("instant") != tt.words {
				t.Errorf("instant %d (%.2f, %q) daily %d (%.2f); want %d, %d, %q", fc.Instant.Credits, fc.Instant.Expected,
					fc.Words("instant"), d.Credits, d.Expected, tt.instant, tt.daily, tt.words)
			}
		})
	}
}

// TestForecastBurstProtection: the forecast replays the charge's burst
// rule over the dates, so a dump of old posts is forecast as charged
// once, as it will be.
func TestForecastBurstProtection(t *testing.T) {
	steady := every(at("2025-03-01 09:00"), day, 28)
	charged := func(dates []time.Time) float64 {
		h := Read(dates, now)
		return h.PerMonth * h.PerPost * float64(now.Sub(h.start)) / float64(Month)
	}
	dump := func(when string) []time.Time {
		out := make([]time.Time, 20)
		for i := range out {
			out[i] = at(when)
		}
		return join(steady, out)
	}
	tests := []struct {
		name  string
		dates []time.Time
		want  float64 // posts charged after the oldest
	}{
		{"daily", steady, 27},
		// 18 hours after a daily post: the first of the dump is charged.
		{"a dump 18 hours after a post", dump("2025-02-21 03:00"), 28},
		// 6 hours after one: the whole dump is a burst.
		{"a dump 6 hours after a post", dump("2025-02-20 15:00"), 27},
	}
	for _, tt := range tests {
		if got := charged(tt.dates); got < tt.want-1e-6 || got > tt.want+1e-6 {
			t.Errorf("%s: %.3f posts charged; want %v", tt.name, got, tt.want)
		}
	}
	if f := Estimate(dump("2025-02-21 03:00"), presets, now); f.PostsPerMonth < 50 || f.Instant.Credits > 32 {
		t.Errorf("with a dump: %.1f posts a month, instant %s", f.PostsPerMonth, f.Instant.Words())
	}
}
