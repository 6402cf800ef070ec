package forecast

import (
	"math"
	"sort"
	"time"

	"github.com/feedmail/feedmail/billing"
)

// The cost of digests: a digest's schedule walked slot by slot, each
// feed's chance of news in a slot, and billing's price of an issue.

// Slots is a digest schedule as the forecast reads it: the first slot
// after a time, zero when there is none (package digest's Schedule is
// one). The caller parses schedules, so the forecast needs neither the
// digest package nor the store behind it.
type Slots interface {
	Next(after time.Time) time.Time
}

// Preset is a digest schedule offered by name (package digest's presets),
// as the forecast prices it: its key and its slots.
type Preset struct {
	Key   string
	Slots Slots
}

// PresetCost is the forecast for one digest preset.
type PresetCost struct {
	Preset Preset
	Cost
}

// maxSlots bounds the digest slots walked to average a schedule; a
// one-year walk of a daily schedule stays under it.
const maxSlots = 2000

// DigestCost returns the credits a month of a digest on schedule s with
// these feeds (those without a known history are left out). An issue
// costs billing.DigestCharge(feeds with news), nothing when none has;
// slots a month are counted over a year of s after from, and each feed has
// news in a slot with its newsChance, independently of the others. A feed
// has news in at most as many issues as it has posts, so a digest never
// costs more than its feeds' posts would cost one email each.
func DigestCost(feeds []History, s Slots, from time.Time) Cost {
	perMonth := slotsPerMonth(s, from)
	var ps []float64
	for _, h := range feeds {
		if h.Known() && perMonth > 0 {
			ps = append(ps, min(h.newsChance(s), h.PerMonth/perMonth))
		}
	}
	return newCost(perMonth*issueCost(ps), false)
}

// slotsPerMonth is how many slots of s a month has, counted over a year
// after from (or its first maxSlots).
func slotsPerMonth(s Slots, from time.Time) float64 {
	gaps := scheduleGaps(s, from)
	var span time.Duration
	for _, g := range gaps {
		span += g
	}
	if span <= 0 {
		return 0
	}
	return float64(len(gaps)) * float64(Month) / float64(span)
}

// scheduleGaps returns the gaps between the slots of s in a year after
// from, at most maxSlots of them.
func scheduleGaps(s Slots, from time.Time) []time.Duration {
	first := s.Next(from)
	end := first.AddDate(1, 0, 0)
	var gaps []time.Duration
	for prev := first; len(gaps) < maxSlots; {
		next := s.Next(prev)
		if next.IsZero() || next.After(end) {
			break
		}
		gaps, prev = append(gaps, next.Sub(prev)), next
	}
	return gaps
}

// minReplaySlots is the fewest slots of its own history a feed is replayed
// over; with fewer, its chance of news comes from its rate.
const minReplaySlots = 7

// newsChance returns the chance that a slot of s has a post of the feed.
// It replays the feed's dates on s: the share of the slots after its
// oldest item that had news (a steady daily poster fills every daily issue; a
// burst fills one). When its history covers fewer than minReplaySlots
// slots (or more than maxSlots), posts are taken as random at the rate (Poisson): the average of
// 1 − e^(−rate×gap) over a year of the schedule's gaps.
func (h History) newsChance(s Slots) float64 {
	// Whole slots only: from the first slot after the oldest item.
	prev := s.Next(h.start)
	j := sort.Search(len(h.dates), func(i int) bool { return h.dates[i].After(prev) })
	slots, withNews, whole := 0, 0, false
	for !prev.IsZero() && slots < maxSlots {
		next := s.Next(prev)
		if next.IsZero() || next.After(h.now) {
			whole = true
			break
		}
		news := false
		for j < len(h.dates) && !h.dates[j].After(next) {
			news, j = true, j+1
		}
		if news {
			withNews++
		}
		slots, prev = slots+1, next
	}
	if whole && slots >= minReplaySlots {
		return float64(withNews) / float64(slots)
	}
	gaps := scheduleGaps(s, h.now)
	if len(gaps) == 0 {
		return 0
	}
	var sum float64
	for _, g := range gaps {
		sum += 1 - math.Exp(-h.PerMonth*float64(g)/float64(Month))
	}
	return sum / float64(len(gaps))
}

// issueCost is the expected billing.DigestCharge of one issue whose feeds have
// news with chances ps: the distribution of how many have, feed by feed.
func issueCost(ps []float64) float64 {
	dist := []float64{1} // dist[k]: the chance that k feeds have news
	for _, p := range ps {
		next := make([]float64, len(dist)+1)
		for k, q := range dist {
			next[k] += q * (1 - p)
			next[k+1] += q * p
		}
		dist = next
	}
	var e float64
	for k, q := range dist {
		e += q * float64(billing.DigestCharge(k))
	}
	return e
}
