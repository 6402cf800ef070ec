package web

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/store"
)

// TestOwnerForecast: the owner's forecast from the feed's rate and its
// readers, and from the last 30 days when the rate is unknown.
func TestOwnerForecast(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var daily []time.Time
	for i := range 31 {
		daily = append(daily, now.AddDate(0, 0, -i))
	}
	known := forecast.Read(daily, now)
	unknown := forecast.Read(nil, now)
	tests := []struct {
		name    string
		h       forecast.History
		o       store.OwnedFeedStats
		balance int64
		want    string
	}{
		{"daily (30.4 posts a month), 3 instant, 1 digest", known, store.OwnedFeedStats{Instant: 3, Digest: 1}, 120,
			"about 91 credits a month for instant readers, plus up to 30 for digest readers; your balance lasts about 29 days at that"},
		{"daily, instant only", known, store.OwnedFeedStats{Instant: 1}, 0,
			"about 30 credits a month for instant readers; your balance lasts about 0 days at that"},
		{"unknown rate, used", unknown, store.OwnedFeedStats{Used30d: 60}, 30,
			"60 credits in the last 30 days; your balance lasts about 15 days at that"},
	}
	for _, tt := range tests {
		if got := ownerForecast(tt.h, tt.o, tt.balance); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if got := ownerForecast(unknown, store.OwnedFeedStats{}, 5); got[:25] != "not enough history to tel" {
		t.Errorf("unknown, unused: %q", got)
	}
}
