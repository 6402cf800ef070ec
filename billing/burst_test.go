package billing

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

const day = 24 * time.Hour

// update is one poll's new posts of a simulated feed.
type update struct {
	at time.Duration // since the timeline's start
	n  int
}

// daily returns one post a day at hour h for days days from day from.
func daily(from, days int, h time.Duration) []update {
	var out []update
	for d := from; d < from+days; d++ {
		out = append(out, update{time.Duration(d)*day + h, 1})
	}
	return out
}

// every returns n updates of k posts, step apart, from start.
func every(start, step time.Duration, n, k int) []update {
	out := make([]update, n)
	for i := range out {
		out[i] = update{start + time.Duration(i)*step, k}
	}
	return out
}

// tally is what a stretch of a timeline cost.
type tally struct{ posts, charged int }

// replay runs the rule over ups and tallies the posts of the updates
// whose time is in [from, to).
func replay(t *testing.T, ups []update, from, to time.Duration) (tally, FeedRate) {
	t.Helper()
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var r FeedRate
	var got tally
	for _, u := range ups {
		var burst []bool
		r, burst = r.Update(t0.Add(u.at), u.n)
		if len(burst) != u.n || r.Allowance < 0 {
			t.Fatalf("update at %v: %d decisions for %d posts, allowance %v", u.at, len(burst), u.n, r.Allowance)
		}
		if u.at < from || u.at >= to {
			continue
		}
		for _, b := range burst {
			got.posts++
			if !b {
				got.charged++
			}
		}
	}
	return got, r
}

func join(parts ...[]update) []update {
	var out []update
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestBurstTimelines(t *testing.T) {
	const h = time.Hour
	tests := []struct {
		name     string
		ups      []update
		from, to time.Duration // the stretch tallied
		want     tally
	}{
		{"a daily feed: every post charged", daily(0, 60, 9*h), 0, 60 * day, tally{60, 60}},
		// Gaps of 36 and then 18 hours when the hour changes.
		{"a daily feed at changing hours: every post charged",
			join(daily(0, 10, 9*h), daily(10, 10, 21*h), daily(20, 10, 15*h)), 0, 30 * day, tally{30, 30}},
		// A post 5 hours after the previous one of a daily feed is a burst.
		{"a daily feed posting twice in 5 hours", join(daily(0, 10, 9*h), []update{{9*day + 14*h, 1}}),
			9 * day, 10 * day, tally{2, 1}},
		// 50 old posts found at once: the first is charged, 49 are a burst;
		// the next day's post is charged again.
		{"a daily feed dumps 50 old posts", join(daily(0, 30, 9*h), []update{{30*day + 15*h, 50}}),
			30 * day, 31 * day, tally{50, 1}},
		{"after the dump, daily posts charged", join(daily(0, 30, 9*h), []update{{30*day + 15*h, 50}}, daily(31, 10, 9*h)),
			31 * day, 41 * day, tally{10, 10}},
		// A live blog: a post every 5 minutes for 4 hours, polled every
		// 15 minutes (3 posts a poll), by a feed that posts daily.
		{"a live blog on a daily feed", join(daily(0, 30, 9*h), every(30*day+13*h, 15*time.Minute, 16, 3)),
			30 * day, 31 * day, tally{48, 2}},
		// 15 posts in an hour, one a poll, the day after a daily post.
		{"15 posts in an hour from a daily feed", join(daily(0, 30, 9*h), every(30*day+9*h, 4*time.Minute, 15, 1)),
			30 * day, 31 * day, tally{15, 1}},
		// Hourly for a month, then every 6 hours, then daily: slowing
		// down never makes a post free.
		{"a feed that slows down", join(every(0, h, 30*24, 1), every(30*day, 6*h, 40, 1), daily(40, 20, 0)),
			30 * day, 60 * day, tally{60, 60}},
		// A busy feed (48 posts a day, 2 a poll every hour) is charged in
		// full once its history says so.
		{"a busy feed, second week", every(0, h, 14*24, 2), 7 * day, 14 * day, tally{336, 336}},
		// A feed going from daily to hourly for good: the average adapts,
		// and after two weeks every post is charged again.
		{"a daily feed turned hourly, third week", join(daily(0, 30, 9*h), every(30*day, h, 21*24, 1)),
			44 * day, 51 * day, tally{168, 168}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := replay(t, tt.ups, tt.from, tt.to)
			if got != tt.want {
				t.Errorf("posts %d, charged %d; want %d, %d", got.posts, got.charged, tt.want.posts, tt.want.charged)
			}
		})
	}
}

// TestBurstDailyFeed15InAnHour: the issue's case, against the bound the
// rule documents (the allowance when the burst began, at most a day of
// average posts, plus its growth during the burst).
func TestBurstDailyFeed15InAnHour(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var r FeedRate
	for d := range 30 {
		var burst []bool
		r, burst = r.Update(t0.Add(time.Duration(d)*day), 1)
		if burst[0] {
			t.Fatalf("day %d: the daily post was a burst", d)
		}
	}
	start := t0.Add(30*day + 3*time.Hour)
	bound := allowanceCap(r.PerDay(start))
	charged := 0
	for i := range 15 {
		at := start.Add(time.Duration(i) * 4 * time.Minute)
		a := r.PerDay(at)
		prev := r.At
		var burst []bool
		r, burst = r.Update(at, 1)
		bound += max(BurstFactor*a, 1) * float64(at.Sub(prev)) / float64(AllowanceSpan)
		if !burst[0] {
			charged++
		}
	}
	if charged != 1 || float64(charged) > bound+1e-9 {
		t.Errorf("15 posts in an hour charged %d (bound %.2f); want 1", charged, bound)
	}
}

func TestBurstRuleProperties(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	// Whatever the history, a post 24 hours or more after the previous
	// one is charged.
	histories := map[string][]update{
		"none":          nil,
		"dump":          {{0, 500}},
		"hourly":        every(0, time.Hour, 24*20, 1),
		"busy then gap": every(0, time.Minute, 2000, 3),
	}
	for name, ups := range histories {
		for _, gap := range []time.Duration{day, day + time.Second, 3 * day, 400 * day} {
			_, r := replay(t, ups, 0, 0)
			last := t0
			if !r.At.IsZero() {
				last = r.At
			}
			_, burst := r.Update(last.Add(gap), 1)
			if burst[0] {
				t.Errorf("%s: a post %v after the previous one was a burst", name, gap)
			}
		}
	}
	// Nothing to decide: no change.
	var r FeedRate
	if got, b := r.Update(t0, 0); got != r || b != nil {
		t.Errorf("Update(0 posts) = %+v, %v", got, b)
	}
	// A clock step back counts as no time passing.
	_, r = replay(t, daily(0, 3, 0), 0, 0)
	last := r.At
	r2, burst := r.Update(last.Add(-time.Hour), 1)
	if !burst[0] || !r2.At.Equal(last) {
		t.Errorf("update dated before the last: burst %v at %v", burst, r2.At)
	}
	// A feed's first day: its average is unknown, every post is charged.
	young, _ := (FeedRate{}).Update(t0, 1)
	for _, n := range []int{3, 50} {
		if _, b := young.Update(t0.Add(time.Hour), n); slices.Contains(b, true) {
			t.Errorf("a feed an hour old: %d posts at once had bursts %v", n, b)
		}
	}
}

func TestPerDay(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, perDay := range []int{1, 4, 24, 96} {
		var r FeedRate
		step := day / time.Duration(perDay)
		for i := range 60 * perDay {
			r, _ = r.Update(t0.Add(time.Duration(i)*step), 1)
		}
		got := r.PerDay(r.At.Add(step))
		// Just before a post the average is at its lowest: 7% under
		// for a daily feed.
		if got < float64(perDay)*0.9 || got > float64(perDay)*1.1 {
			t.Errorf("%d a day for 60 days: average %.3f", perDay, got)
		}
	}
	if got := (FeedRate{}).PerDay(t0); got != 0 {
		t.Errorf("no history: %v", got)
	}
}

func TestPostCharge(t *testing.T) {
	tests := []struct {
		payer   Payer
		burst   bool
		credits int
		free    string
	}{
		{PaidByReader, false, CreditsPerPost, ""},
		{PaidByReader, true, 0, BurstReason},
		{PaidBySender, false, CreditsPerPost, ""},
		{PaidBySender, true, CreditsPerPost, ""},
	}
	for _, tt := range tests {
		c, f := PostCharge(tt.payer, tt.burst)
		if c != tt.credits || f != tt.free {
			t.Errorf("PostCharge(%v, %v) = %d, %q; want %d, %q", tt.payer, tt.burst, c, f, tt.credits, tt.free)
		}
	}
}

func ExampleFeedRate_Update() {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var r FeedRate
	r, _ = r.Update(t0, 1)
	r, _ = r.Update(t0.Add(day), 1)
	_, burst := r.Update(t0.Add(day+time.Minute), 3)
	fmt.Println(burst)
	// Output: [true true true]
}

func TestSteadyRate(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, perDay := range []float64{0, 0.5, 1, 30} {
		r := SteadyRate(perDay, t0)
		if got := r.PerDay(t0); got < perDay-1e-9 || got > perDay+1e-9 {
			t.Errorf("SteadyRate(%v).PerDay = %v", perDay, got)
		}
		if r.Allowance != allowanceCap(perDay) {
			t.Errorf("SteadyRate(%v) allowance %v", perDay, r.Allowance)
		}
	}
}
