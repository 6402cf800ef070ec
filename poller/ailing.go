package poller

import (
	"slices"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// The rules of a feed that moves or dies (docs/design.md, "A feed that
// moves or dies"), in one place.
const (
	// AilingAfter and AilingPolls: a feed is ailing once its failures have
	// lasted AilingAfter across at least AilingPolls polls in a row. A
	// 404's 24-hour penalty makes three polls span two days; a 6-hour
	// outage is never ailing.
	AilingAfter = 48 * time.Hour
	AilingPolls = 3
	// TellAfter: readers of a feed that has ailed this long, and for which
	// rediscovery found nowhere to go, are told once.
	TellAfter = 7 * 24 * time.Hour
	// StaleMin is the shortest silence after which a feed that still
	// answers is looked at for a newer feed on its site; StaleGaps times
	// its longest gap between posts, when that is longer.
	StaleMin  = 30 * 24 * time.Hour
	StaleGaps = 3
	// StaleRecheck is how long a stale feed whose site offered nothing
	// newer is left before it is looked at again.
	StaleRecheck = 7 * 24 * time.Hour
)

// Ailing reports whether feed f, as stored, has failed for longer than an
// outage at now.
func Ailing(f *store.Feed, now time.Time) bool {
	return f.ConsecutiveErrors >= AilingPolls && f.ErrorsSince != nil && !now.Before(f.ErrorsSince.Add(AilingAfter))
}

// TellReaders reports whether the readers of ailing feed f are owed the
// one notice that nothing was found (it has ailed TellAfter).
func TellReaders(f *store.Feed, now time.Time) bool {
	return Ailing(f, now) && !now.Before(f.ErrorsSince.Add(TellAfter))
}

// StaleAfter is the silence after which a feed whose posts came at most
// longestGap apart is suspected of having frozen: StaleGaps times that
// gap, and never less than StaleMin.
func StaleAfter(longestGap time.Duration) time.Duration {
	return max(StaleMin, StaleGaps*longestGap)
}

// LongestGap is the longest time between consecutive dated posts of
// dates (any order; undated zero times are skipped).
func LongestGap(dates []time.Time) time.Duration {
	var ds []time.Time
	for _, d := range dates {
		if !d.IsZero() {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(ds); i++ {
		gap = max(gap, ds[i].Sub(ds[i-1]))
	}
	return gap
}

// RetryAfter is the wait before the next rediscovery attempt of a feed
// that still fails after attempts attempts: 6 h, doubling, at most 3 days,
// so a feed that moved is found soon and a dead one costs its host a few
// requests a week.
func RetryAfter(attempts int) time.Duration {
	d := 6 * time.Hour
	for i := 1; i < attempts && d < 72*time.Hour; i++ {
		d *= 2
	}
	return min(d, 72*time.Hour)
}

// Health is what feed f is to its readers at now, in one word: "healthy",
// "failing" (errors, not yet more than an outage), "ailing", "frozen" (it
// answers, but its site advertises a newer feed), "moved" (its readers
// were moved to its new address), or the feed's own state when it is not
// polled ("gone", "blacklisted", "merged").
func Health(f *store.Feed, now time.Time) string {
	switch {
	case f.RecoveryState == store.RecoveryMoved:
		return "moved"
	case f.State != store.FeedActive:
		return f.State
	case Ailing(f, now):
		return "ailing"
	case f.ConsecutiveErrors > 0:
		return "failing"
	case f.RecoveryState == store.RecoveryFrozen && sameTime(f.RecoveryEpisode, f.LastNewItemAt):
		return "frozen" // and no new post since it was found frozen
	}
	return "healthy"
}
