package preview

import (
	"sort"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// sampleFallback is how many of the newest posts a sample issue shows
// when the feed posted nothing in the schedule's last period.
const sampleFallback = 3

// newest returns the feed's newest post: the latest dated one, else
// (no post dated) the first in the feed's order; nil when it has none.
func newest(items []store.Item) *store.Item {
	var best *store.Item
	for i := range items {
		it := &items[i]
		if it.PublishedAt == nil || it.PublishedAt.IsZero() {
			continue
		}
		if best == nil || it.PublishedAt.After(*best.PublishedAt) {
			best = it
		}
	}
	if best == nil && len(items) > 0 {
		best = &items[0]
	}
	return best
}

// sample returns a sample issue of schedule s at now: the issue of its
// latest slot, holding the posts published since the slot before it, as
// a real issue would (newest first, at most mailer.DefaultPerFeed, with
// more counting the ones left out). When there were none, it holds the
// newest few posts and note says so.
func sample(items []store.Item, s *digest.Schedule, now time.Time) (slot time.Time, out []store.Item, more int, note string) {
	slot, ok := s.Latest(time.Time{}, now)
	if !ok {
		slot = now
	}
	prev, ok := s.Latest(time.Time{}, slot.Add(-time.Nanosecond))
	if !ok {
		prev = slot.Add(-24 * time.Hour)
	}
	sorted := byDate(items)
	for _, it := range sorted {
		d := store.ItemDate(it)
		if d.After(prev) && !d.After(slot) {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		out = sorted[:min(sampleFallback, len(sorted))]
		note = "The feed posted nothing between the last two issues; this sample shows its newest posts."
	}
	more = max(0, len(out)-mailer.DefaultPerFeed)
	return slot, out[:len(out)-more], more, note
}

// byDate returns items newest first by date (published, else first
// seen), the feed's order kept among equals.
func byDate(items []store.Item) []store.Item {
	out := append([]store.Item(nil), items...)
	sort.SliceStable(out, func(i, j int) bool { return store.ItemDate(out[i]).After(store.ItemDate(out[j])) })
	return out
}

// Forecast is what a choice would cost a month, from the dates of the
// feed's posts (package forecast, as the signup page says it).
type Forecast struct {
	// Delivery is "instant" or the digest's schedule spec.
	Delivery string `json:"delivery"`
	// NotEnoughHistory: the dates cannot tell; Reason says why.
	NotEnoughHistory bool    `json:"not_enough_history"`
	Reason           string  `json:"reason,omitempty"`
	PostsPerMonth    float64 `json:"posts_per_month"`
	CreditsPerMonth  int     `json:"credits_per_month"`
	// AtLeast: the rate was capped, the cost is higher.
	AtLeast bool `json:"at_least,omitempty"`
	// Words is the cost as the pages say it ("about 30 credits a month").
	Words string `json:"words"`
}

// forecastOf returns the forecast of choice c for a feed with items.
func forecastOf(items []store.Item, c choice, now time.Time) Forecast {
	dates := make([]time.Time, 0, len(items))
	for _, it := range items {
		if it.PublishedAt != nil {
			dates = append(dates, it.PublishedAt.UTC())
		}
	}
	h := forecast.Read(dates, now)
	out := Forecast{Delivery: Instant}
	if c.sched != nil {
		out.Delivery = c.sched.Spec()
	}
	if !h.Known() {
		out.NotEnoughHistory, out.Reason, out.Words = true, h.Reason, "not enough history to tell the cost"
		return out
	}
	cost := h.InstantCost()
	if c.sched != nil {
		cost = forecast.DigestCost([]forecast.History{h}, c.sched, now)
	}
	out.PostsPerMonth, out.CreditsPerMonth, out.AtLeast, out.Words = h.PerMonth, cost.Credits, cost.AtLeast, cost.Words()
	return out
}
