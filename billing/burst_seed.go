package billing

import (
	"slices"
	"time"
)

// Seeding burst protection at a feed's first poll. Its posts are not
// updates (feedmail mails none of them), but their published dates say
// how often the feed posts: SeedRate replays them through the rule as if
// feedmail had seen each at its date, so that a burst on the feed's first
// day on feedmail is judged against its own pace instead of being charged
// in full while its history is shorter than MinHistory.

// SeedMinDates is the fewest distinct published dates that say a feed's
// pace: two are a single gap, which one late or early post can halve or
// double.
const SeedMinDates = 3

// SeedRate returns the state of a feed whose first poll held posts
// published at published, as of now: the posts replayed through Update
// in date order, the posts of one date as one update, with the allowance
// full at the pace they give (none of them was charged). Dates after now,
// zero dates, and a list with fewer than SeedMinDates distinct dates say nothing
// about the feed's pace: ok is false and the zero FeedRate is returned.
func SeedRate(published []time.Time, now time.Time) (r FeedRate, ok bool) {
	dates := make([]time.Time, 0, len(published))
	for _, d := range published {
		if !d.IsZero() && !d.After(now) {
			dates = append(dates, d)
		}
	}
	slices.SortFunc(dates, func(a, b time.Time) int { return a.Compare(b) })
	if len(slices.CompactFunc(slices.Clone(dates), time.Time.Equal)) < SeedMinDates {
		return FeedRate{}, false
	}
	for i := 0; i < len(dates); {
		n := 1
		for i+n < len(dates) && dates[i+n].Equal(dates[i]) {
			n++
		}
		r, _ = r.Update(dates[i], n)
		i += n
	}
	// The replay only learns the pace: the posts it replays were never
	// charged, so they leave the allowance full for what comes next.
	r.Allowance = allowanceCap(r.PerDay(now))
	return r, true
}
