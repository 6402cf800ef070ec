package newitems

import (
	"slices"
	"time"
)

// Rule names why an item was recorded as seen but not delivered. The values
// are human-readable; they are shown to operators and stored as they are.
type Rule string

// The ignore rules of the product (docs/design.md, "New items"), in the
// order Select applies them.
const (
	// RuleOlderThanYear: the item's date is more than MaxAge before now.
	RuleOlderThanYear Rule = "older than one year"
	// RuleOlderThanTenth: the item's date is before the date of the 10th
	// newest dated item in this poll of the feed.
	RuleOlderThanTenth Rule = "older than the 10th newest item in the feed"
	// RuleOlderThanNewestSeen: the item's date is more than MaxBehindSeen
	// before the newest item previously seen from this feed.
	RuleOlderThanNewestSeen Rule = "more than 7 days older than the newest item seen before"
)

const (
	// MaxAge is "one year" for RuleOlderThanYear: exactly 365 days of
	// 24 hours, a fixed duration that does not depend on leap years, time
	// zones or the calendar.
	MaxAge = 365 * 24 * time.Hour
	// MaxBehindSeen is the "7 days" of RuleOlderThanNewestSeen.
	MaxBehindSeen = 7 * 24 * time.Hour
	// TenthRank is the rank used by RuleOlderThanTenth.
	TenthRank = 10
)

// Verdict is Select's decision about one candidate item.
type Verdict struct {
	Item Item
	// Ignored is the first rule that applies, or "" when the item is to be
	// delivered.
	Ignored Rule
}

// Deliver reports whether the item is to be delivered.
func (v Verdict) Deliver() bool { return v.Ignored == "" }

// Select decides which candidate items (items of this poll not seen before)
// are delivered and which are only recorded as seen. It is a pure function.
//
//   - all is every item of this poll (candidates included); it serves the
//     10th-newest rule.
//   - newestSeen is the date of the newest item previously seen from the
//     feed, zero if none (the rule then does not apply).
//   - now is the current time.
//
// An item's date is Item.Published (which Parse already falls back to
// Updated). Items without a date are never ignored. Boundaries are strict,
// so an item exactly at a limit is delivered:
//
//   - RuleOlderThanYear: now − date > MaxAge (365 × 24 h).
//   - RuleOlderThanTenth: date is before the 10th newest date among the
//     dated items in all (counting repeats; an item dated the same as the
//     10th newest is not older). With fewer than 10 dated items the rule
//     does not apply.
//   - RuleOlderThanNewestSeen: newestSeen − date > MaxBehindSeen (7 × 24 h).
//
// When several rules apply, the first in that order is reported. Items dated
// in the future are not treated specially. Verdicts come in the order of
// candidates, one per candidate.
func Select(candidates []Item, all []Item, newestSeen time.Time, now time.Time) []Verdict {
	tenth, haveTenth := tenthNewest(all)
	out := make([]Verdict, len(candidates))
	for i, it := range candidates {
		out[i].Item = it
		d := it.Published
		if d.IsZero() {
			continue
		}
		switch {
		case now.Sub(d) > MaxAge:
			out[i].Ignored = RuleOlderThanYear
		case haveTenth && d.Before(tenth):
			out[i].Ignored = RuleOlderThanTenth
		case !newestSeen.IsZero() && newestSeen.Sub(d) > MaxBehindSeen:
			out[i].Ignored = RuleOlderThanNewestSeen
		}
	}
	return out
}

// tenthNewest returns the TenthRank-th newest date among the dated items.
func tenthNewest(all []Item) (time.Time, bool) {
	dates := make([]time.Time, 0, len(all))
	for _, it := range all {
		if !it.Published.IsZero() {
			dates = append(dates, it.Published)
		}
	}
	if len(dates) < TenthRank {
		return time.Time{}, false
	}
	slices.SortFunc(dates, func(a, b time.Time) int { return b.Compare(a) })
	return dates[TenthRank-1], true
}
