package poller

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

func TestAilingRule(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	cases := []struct {
		name         string
		errors       int
		since        *time.Time
		ailing, tell bool
	}{
		{"healthy", 0, nil, false, false},
		{"a 6-hour outage, many polls", 12, ago(6 * time.Hour), false, false},
		{"47 hours, 5 polls", 5, ago(47 * time.Hour), false, false},
		{"48 hours, 2 polls (penalties spaced them)", 2, ago(48 * time.Hour), false, false},
		{"48 hours, 3 polls: a 404 polled daily", 3, ago(48 * time.Hour), true, false},
		{"6 days", 6, ago(6 * 24 * time.Hour), true, false},
		{"a week", 8, ago(7 * 24 * time.Hour), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &store.Feed{State: store.FeedActive, ConsecutiveErrors: c.errors, ErrorsSince: c.since}
			if got := Ailing(f, now); got != c.ailing {
				t.Errorf("Ailing = %v, want %v", got, c.ailing)
			}
			if got := TellReaders(f, now); got != c.tell {
				t.Errorf("TellReaders = %v, want %v", got, c.tell)
			}
		})
	}
}

func TestStaleAfterHistory(t *testing.T) {
	day := 24 * time.Hour
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		dates []time.Time
		gap   time.Duration
		after time.Duration
	}{
		{"no dates", nil, 0, StaleMin},
		{"daily posts: the 30-day floor", []time.Time{base, base.Add(day), base.Add(2 * day)}, day, StaleMin},
		{"undated items are skipped", []time.Time{{}, base, {}, base.Add(3 * day)}, 3 * day, StaleMin},
		{"any order", []time.Time{base.Add(40 * day), base, base.Add(5 * day)}, 35 * day, 105 * day},
		{"quarterly: three gaps", []time.Time{base, base.Add(90 * day), base.Add(180 * day)}, 90 * day, 270 * day},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LongestGap(c.dates); got != c.gap {
				t.Errorf("LongestGap = %v, want %v", got, c.gap)
			}
			if got := StaleAfter(LongestGap(c.dates)); got != c.after {
				t.Errorf("StaleAfter = %v, want %v", got, c.after)
			}
		})
	}
}

func TestRetryAfterBacksOff(t *testing.T) {
	want := []time.Duration{6 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 72 * time.Hour}
	for attempts, w := range want {
		if got := RetryAfter(attempts); got != w {
			t.Errorf("RetryAfter(%d) = %v, want %v", attempts, got, w)
		}
	}
}

func TestHealthWords(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	long := now.Add(-72 * time.Hour)
	short := now.Add(-time.Hour)
	cases := []struct {
		name string
		f    store.Feed
		want string
	}{
		{"healthy", store.Feed{State: store.FeedActive}, "healthy"},
		{"failing", store.Feed{State: store.FeedActive, ConsecutiveErrors: 2, ErrorsSince: &short}, "failing"},
		{"ailing", store.Feed{State: store.FeedActive, ConsecutiveErrors: 4, ErrorsSince: &long}, "ailing"},
		{"frozen", store.Feed{State: store.FeedActive, RecoveryState: store.RecoveryFrozen, LastNewItemAt: &long, RecoveryEpisode: &long}, "frozen"},
		{"frozen, then a new post", store.Feed{State: store.FeedActive, RecoveryState: store.RecoveryFrozen, LastNewItemAt: &short, RecoveryEpisode: &long}, "healthy"},
		{"frozen, then it failed", store.Feed{State: store.FeedActive, RecoveryState: store.RecoveryFrozen, ConsecutiveErrors: 1, ErrorsSince: &short}, "failing"},
		{"moved", store.Feed{State: store.FeedMerged, RecoveryState: store.RecoveryMoved}, "moved"},
		{"gone", store.Feed{State: store.FeedGone}, "gone"},
	}
	for _, c := range cases {
		if got := Health(&c.f, now); got != c.want {
			t.Errorf("%s: Health = %q, want %q", c.name, got, c.want)
		}
	}
}
