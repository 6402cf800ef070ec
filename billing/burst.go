package billing

import (
	"math"
	"time"
)

// Burst protection: a feed that suddenly publishes far more than it
// usually does does not empty its instant readers' balances. The rule,
// exactly:
//
//   - A feed's update is the batch of new posts one poll (or one push)
//     records; every post of it arrives at that moment. Posts an ignore
//     rule keeps back, and those of a feed's first poll, are not updates.
//   - Its average rate A (posts a day) is an exponentially weighted mean
//     over the posts seen since its history began: each post counts
//     e^(−age/RateWindow), and the sum is divided by the weight of the
//     time covered, RateWindow × (1 − e^(−h/RateWindow)), h being the
//     history's length but at least MinHistory. So a steady feed of r posts
//     a day has A = r, and A follows a change of pace within a week or two.
//   - Each feed has an allowance of charged posts. It grows, between one
//     update and the next, at BurstFactor × A posts a day, and at least one
//     post a day; it holds at most a day of the feed's posts at its average
//     rate (A × 1 day), and at least one post.
//   - During a feed's first MinHistory its average is not known yet: every
//     post is charged and the allowance stays full. A feed's first poll
//     seeds its history from its posts' published dates (SeedRate).
//   - Each post of an update, in order, is charged when the allowance holds
//     a whole post, which it then uses up; otherwise it is a burst post:
//     instant email of it is free and the ledger says "burst: free".
//   - A is brought up to date after the update's posts are decided.
//
// What follows: a post that comes 24 hours or more after the feed's
// previous one is always charged; a feed posting at up to twice its usual
// pace has every post charged; and a burst (any stretch of time) costs at most what the allowance held
// when it began (at most a day of the feed's average posts, at least 1)
// plus what the allowance grows during it. A daily feed that publishes 15
// posts in an hour costs its instant readers 1 credit for them.
//
// The rule is for posts readers pay for themselves; a payer that pays for
// what is sent, whatever it is, skips it (see PostCharge).

// Constants of burst protection (see above).
const (
	// RateWindow is the time constant of the average rate: a post counts
	// e^(−age/RateWindow) in it.
	RateWindow = 7 * 24 * time.Hour
	// MinHistory is the shortest history the average is taken over, so a
	// feed's first posts are not read as a high rate.
	MinHistory = 24 * time.Hour
	// BurstFactor is how much faster than its average a feed may post
	// before its posts are a burst.
	BurstFactor = 2.0
	// AllowanceSpan is how much of its average posts the allowance holds at
	// most (at least one post); the allowance grows at least one post per
	// AllowanceSpan.
	AllowanceSpan = 24 * time.Hour
)

// BurstReason is the ledger reason of a post sent free as a burst.
const BurstReason = "burst: free"

// FeedRate is what burst protection keeps for one feed, as of At.
type FeedRate struct {
	// Score is the weighted count of the posts seen: each counts
	// e^(−age/RateWindow), age as of At.
	Score float64
	// Allowance is the charged posts the feed may still send at At.
	Allowance float64
	// At is the feed's latest update; zero before its first.
	At time.Time
	// Since is when its history began (its first update).
	Since time.Time
}

// PerDay returns the feed's average rate A in posts a day at now, before
// any update at now (see the rule above). A feed without history has 0.
func (r FeedRate) PerDay(now time.Time) float64 {
	if r.At.IsZero() || r.Score <= 0 {
		return 0
	}
	h := max(now.Sub(r.Since), MinHistory)
	weight := float64(RateWindow) * -math.Expm1(-float64(h)/float64(RateWindow))
	return r.decayedScore(now) * float64(24*time.Hour) / weight
}

// decayedScore is Score as of now.
func (r FeedRate) decayedScore(now time.Time) float64 {
	age := max(now.Sub(r.At), 0)
	return r.Score * math.Exp(-float64(age)/float64(RateWindow))
}

// allowanceCap is the most the allowance holds at a rate of perDay.
func allowanceCap(perDay float64) float64 {
	return max(1, perDay*float64(AllowanceSpan)/float64(24*time.Hour))
}

// Update applies the rule to an update of n posts at now and returns the
// feed's new state and, for each post in order, whether it is a burst
// (free to instant readers who pay for themselves). An update dated before
// At counts as at At. n ≤ 0 changes nothing.
func (r FeedRate) Update(now time.Time, n int) (FeedRate, []bool) {
	if n <= 0 {
		return r, nil
	}
	if !r.At.IsZero() && now.Before(r.At) {
		now = r.At
	}
	next := r
	burst := make([]bool, n)
	switch {
	case r.At.IsZero():
		next = FeedRate{Since: now, Allowance: allowanceCap(0)}
		return next.learn(now, n), burst
	case now.Sub(r.Since) < MinHistory:
		// Its average is not known yet: every post is charged and the
		// allowance stays full.
		next.Score = r.decayedScore(now)
		next.Allowance = allowanceCap(r.PerDay(now))
		return next.learn(now, n), burst
	}
	a := r.PerDay(now)
	grow := max(BurstFactor*a, 1) * float64(now.Sub(r.At)) / float64(AllowanceSpan)
	next.Allowance = min(r.Allowance+grow, allowanceCap(a))
	next.Score = r.decayedScore(now)
	for i := range burst {
		// A tolerance keeps an exact day's growth (1.0) from falling short.
		if next.Allowance >= 1-1e-9 {
			next.Allowance = max(next.Allowance-1, 0)
		} else {
			burst[i] = true
		}
	}
	return next.learn(now, n), burst
}

// learn counts n posts at now in the average (Score already decayed to now).
func (r FeedRate) learn(now time.Time, n int) FeedRate {
	r.Score += float64(n)
	r.At = now
	return r
}

// Payer is who pays for an instant email.
type Payer int

// Payers.
const (
	// PaidByReader: the reader pays for their own email; bursts are free.
	PaidByReader Payer = iota
	// PaidBySender: someone pays for what is sent (a feed's owner paying
	// for its readers): every post costs CreditsPerPost, bursts too.
	PaidBySender
)

// PostCharge returns the credits an instant email of one post costs payer
// and, when it is free, why (the ledger reason): a burst post is free to a
// reader who pays for themselves (BurstReason); everything else costs
// CreditsPerPost.
func PostCharge(payer Payer, burst bool) (credits int, free string) {
	if burst && payer == PaidByReader {
		return 0, BurstReason
	}
	return CreditsPerPost, ""
}

// SteadyRate returns the state of a feed that has posted perDay posts a
// day for long, as of a post at at: what a forecast replays a feed's
// recent posts from, so that they are judged against its own average.
func SteadyRate(perDay float64, at time.Time) FeedRate {
	perDay = max(perDay, 0)
	return FeedRate{
		Score:     perDay * float64(RateWindow) / float64(24*time.Hour),
		Allowance: allowanceCap(perDay),
		At:        at,
		Since:     at.Add(-100 * RateWindow),
	}
}
