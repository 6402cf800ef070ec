// Package forecast owns the cost forecast shown before and after
// subscribing: from the publish dates of a feed's items it estimates posts
// a month, and from billing's prices and rules the credits a month for
// instant delivery and for each digest preset. It applies what the charge
// applies: the subscription's filters (only passing posts are sent), burst
// protection (billing.FeedRate, replayed over the dates), a digest's
// grouping of feeds (billing.DigestCharge) and free empty issues. It is
// pure: callers pass the posts, the digest schedules (Slots) and the time;
// it must not read the store or import what does (package digest). It
// must not hold a price of its own. The method is in docs/design.md.
package forecast

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/filter"
)

// Month is the average month the forecast speaks of (365.2425/12 days).
const Month = time.Duration(30.436875 * 24 * float64(time.Hour))

// Limits of what the dates can tell.
const (
	// MinDated is the fewest dated items that give a rate.
	MinDated = 3
	// MinSpan is the shortest time between the oldest and newest dated
	// items that gives a rate: items all from one day say nothing about a month.
	MinSpan = 24 * time.Hour
	// MaxPostsPerMonth caps the rate (about 100 posts a day): above it
	// the forecast says "more than".
	MaxPostsPerMonth = 3000
)

// Forecast is what a feed's dates say about its cost.
type Forecast struct {
	// NotEnoughHistory: the dates cannot tell a rate; Reason says why and
	// the other fields are zero.
	NotEnoughHistory bool
	Reason           string
	// PostsPerMonth is the estimated rate, at most MaxPostsPerMonth;
	// Capped when the dates gave more.
	PostsPerMonth float64
	Capped        bool
	// Instant is the cost of one email per post.
	Instant Cost
	// Digests is the cost of the feed alone in a digest, one per preset
	// the caller passed, in that order.
	Digests []PresetCost
}

// Cost is an expected number of credits a month.
type Cost struct {
	// Expected is the unrounded estimate; Credits is it rounded (Round).
	Expected float64
	Credits  int
	// AtLeast: the rate was capped, so the true cost is higher.
	AtLeast bool
}

// Words returns the cost as a person reads it: "about 30 credits a month",
// "less than 1 credit a month", "more than 3,000 credits a month".
func (c Cost) Words() string { return c.count("credit", "credits") }

// count words c's rounded amount of one/many a month.
func (c Cost) count(one, many string) string {
	switch {
	case c.AtLeast:
		return "more than " + Thousands(c.Credits) + " " + many + " a month"
	case c.Credits == 0:
		return "less than 1 " + one + " a month"
	case c.Credits == 1:
		return "about 1 " + one + " a month"
	}
	return "about " + Thousands(c.Credits) + " " + many + " a month"
}

// Words returns the forecast of delivery key ("instant" or a preset key)
// in words, or "not enough history to tell the cost" ("" for an unknown key).
func (f Forecast) Words(key string) string {
	if f.NotEnoughHistory {
		return "not enough history to tell the cost"
	}
	if c, ok := f.For(key); ok {
		return c.Words()
	}
	return ""
}

// PostsWords returns the rate as a person reads it: "about 30 posts a
// month", "less than 1 post a month", "more than 3,000 posts a month".
func (f Forecast) PostsWords() string {
	if f.NotEnoughHistory {
		return "not enough history to tell how often it posts"
	}
	return newCost(f.PostsPerMonth, f.Capped).count("post", "posts")
}

// For returns the cost of delivery key: "instant" or a preset key.
func (f Forecast) For(key string) (Cost, bool) {
	if key == "instant" {
		return f.Instant, true
	}
	for _, d := range f.Digests {
		if d.Preset.Key == key {
			return d.Cost, true
		}
	}
	return Cost{}, false
}

// Post is what the forecast reads of one item: its publish date (zero when
// undated) and the words a subscription's filters match.
type Post struct {
	Date           time.Time
	Title, Content string
}

// PostsOf returns posts with the given dates and no words.
func PostsOf(dates []time.Time) []Post {
	out := make([]Post, len(dates))
	for i, d := range dates {
		out[i] = Post{Date: d}
	}
	return out
}

// Estimate returns the forecast from the items' publish dates at now,
// for a subscription without filters, instant and in each of presets.
// Zero dates and dates after now are ignored.
func Estimate(dates []time.Time, presets []Preset, now time.Time) Forecast {
	return EstimatePosts(PostsOf(dates), filter.Filter{}, presets, now)
}

// EstimatePosts returns the forecast of a subscription with filter f
// (the zero Filter passes every post) from the feed's posts at now,
// instant and in each of presets.
func EstimatePosts(posts []Post, f filter.Filter, presets []Preset, now time.Time) Forecast {
	h := ReadPosts(posts, f, now)
	if !h.Known() {
		return Forecast{NotEnoughHistory: true, Reason: h.Reason}
	}
	fc := Forecast{PostsPerMonth: h.PerMonth, Capped: h.Capped, Instant: h.InstantCost()}
	// Presets are counted from a fixed Monday so every page shows the
	// same numbers; a zone shifts the slots, not their gaps (DST aside).
	ref := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range presets {
		fc.Digests = append(fc.Digests, PresetCost{Preset: p, Cost: DigestCost([]History{h}, p.Slots, ref)})
	}
	return fc
}

// History is what a feed's dates say for one subscription: the rate of
// the posts it is sent, or why the dates cannot tell.
type History struct {
	// Reason is why the dates cannot tell a rate ("" when they can).
	Reason string
	// PerMonth is the posts a month that pass the subscription's filters,
	// at most MaxPostsPerMonth; Capped when the dates gave more.
	PerMonth float64
	Capped   bool
	// PerPost is the average credits instant email of one of those posts
	// costs: billing.PostCharge of each, burst protection applied.
	PerPost float64
	start   time.Time   // the oldest dated item: where the window starts
	dates   []time.Time // the passing dated items, not after now, oldest first
	now     time.Time
}

// InstantCost returns the cost of one email per post, zero when the
// history is not known.
func (h History) InstantCost() Cost {
	return newCost(h.PerMonth*h.PerPost, h.Capped)
}

// Known reports whether the dates gave a rate.
func (h History) Known() bool { return h.Reason == "" }

// Read returns what dates say at now, for a subscription without filters.
func Read(dates []time.Time, now time.Time) History {
	return ReadPosts(PostsOf(dates), filter.Filter{}, now)
}

// dated is a post with a date not after now, and whether it passes.
type dated struct {
	at   time.Time
	pass bool
}

// ReadPosts returns what posts say at now for a subscription with filter
// f. The window starts at the oldest dated post (the feed's window shows
// no older) and ends at now, so a feed that stopped posting has its
// silence counted; the rate is the passing posts after the oldest over
// that window. Whether the dates can tell is judged on all posts.
func ReadPosts(posts []Post, f filter.Filter, now time.Time) History {
	var ds []dated
	for _, p := range posts {
		if !p.Date.IsZero() && !p.Date.After(now) {
			ds = append(ds, dated{p.Date, !f.Active() || f.Pass(filter.NewDoc(p.Title, p.Content))})
		}
	}
	if len(ds) < MinDated {
		return History{Reason: "fewer than " + strconv.Itoa(MinDated) + " of its posts are dated"}
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].at.Before(ds[j].at) })
	if ds[len(ds)-1].at.Sub(ds[0].at) < MinSpan {
		return History{Reason: "its dated posts are all from within one day"}
	}
	h := History{start: ds[0].at, now: now}
	burst := replayBursts(ds, now)
	passing, credits := 0, 0
	for i, d := range ds {
		if !d.pass {
			continue
		}
		h.dates = append(h.dates, d.at)
		if i == 0 {
			continue // the window's start, not counted
		}
		c, _ := billing.PostCharge(billing.PaidByReader, burst[i])
		passing, credits = passing+1, credits+c
	}
	window := float64(now.Sub(h.start))
	h.PerMonth = float64(passing) * float64(Month) / window
	if passing > 0 {
		h.PerPost = float64(credits) / float64(passing)
	}
	if h.PerMonth > MaxPostsPerMonth {
		h.PerMonth, h.Capped = MaxPostsPerMonth, true
	}
	return h
}

// replayBursts returns, for each of ds (oldest first), whether burst
// protection makes it a burst: billing's rule replayed over the dates,
// posts with the same date being one update, from the state of a feed
// that posted at its rate over the window (all posts, passing or not:
// the rule is the feed's) before it began.
func replayBursts(ds []dated, now time.Time) []bool {
	perDay := float64(len(ds)-1) * float64(24*time.Hour) / float64(now.Sub(ds[0].at))
	r := billing.SteadyRate(perDay, ds[0].at)
	out := make([]bool, len(ds))
	for i := 1; i < len(ds); {
		j := i
		for j < len(ds) && ds[j].at.Equal(ds[i].at) {
			j++
		}
		var b []bool
		r, b = r.Update(ds[i].at, j-i)
		copy(out[i:j], b)
		i = j
	}
	return out
}

func newCost(expected float64, atLeast bool) Cost {
	return Cost{Expected: expected, Credits: Round(expected), AtLeast: atLeast}
}

// Round returns x as the forecast says it: whole numbers below 100, two
// significant digits above (147 → 150), and 1 rather than 0 from 0.5 up.
func Round(x float64) int {
	if x < 0.5 || math.IsNaN(x) {
		return 0
	}
	if x < 100 {
		return int(math.Round(x))
	}
	unit := math.Pow(10, math.Floor(math.Log10(x))-1)
	return int(math.Round(x/unit) * unit)
}

// Thousands formats n with thousands separators: 3000 → "3,000".
func Thousands(n int) string {
	if n < 0 {
		return "-" + Thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
