package billing

import "strconv"

// The prices of email, in credits. They are written here and nowhere else:
// the store's fan-out, the digest worker, the cost forecast and the pages
// take them from Standard (pages through their words, PostCost and
// DigestRate), so changing a price is one edit below.
const (
	// CreditsPerPost is the price of an instant email of one post.
	CreditsPerPost = 1
	// FeedsPerDigestCredit is how many feeds with news one credit of a
	// digest issue pays for: an issue costs one credit per this many
	// feeds with items in it, rounded up.
	FeedsPerDigestCredit = 5
	// OwnerCreditsPerPost is what a publisher paying for their feed's
	// readers pays per instant email of it: every email sent is paid,
	// burst protection does not apply.
	OwnerCreditsPerPost = 1
	// OwnerCreditsPerIssue is what such a publisher pays per digest issue
	// that carries their feed.
	OwnerCreditsPerIssue = 1
)

// Prices is a price list. Standard is the one the service charges; tests
// build others to show that no page or rule carries a price of its own.
type Prices struct {
	// PerPost is the credits of an instant email of one post.
	PerPost int
	// FeedsPerDigestCredit is the feeds with news one digest credit pays for.
	FeedsPerDigestCredit int
}

// Standard returns the prices the service charges (the constants above).
func Standard() Prices {
	return Prices{PerPost: CreditsPerPost, FeedsPerDigestCredit: FeedsPerDigestCredit}
}

// DigestCharge returns what a digest issue with feedsWithItems feeds that
// have news costs at these prices: one credit per FeedsPerDigestCredit
// feeds, rounded up (at 5: 2 feeds → 1, 6 → 2, 14 → 3). An issue with no
// feeds (an empty slot, which sends nothing) costs 0; so does a negative
// count, which only a bug can produce. A divisor below 1 counts as 1.
func (p Prices) DigestCharge(feedsWithItems int) int {
	if feedsWithItems <= 0 {
		return 0
	}
	per := max(p.FeedsPerDigestCredit, 1)
	n := feedsWithItems / per
	if feedsWithItems%per != 0 {
		n++
	}
	return n
}

// DigestCharge is Standard().DigestCharge: the price of a digest issue.
func DigestCharge(feedsWithItems int) int { return Standard().DigestCharge(feedsWithItems) }

// PostCost is the price of an instant email in words: "1 credit".
func (p Prices) PostCost() string { return Credits(p.PerPost) }

// OwnerPostCost and OwnerIssueCost are a paying publisher's prices in
// words: per instant email, per digest issue carrying their feed.
func (p Prices) OwnerPostCost() string { return Credits(OwnerCreditsPerPost) }

// OwnerIssueCost: see OwnerPostCost.
func (p Prices) OwnerIssueCost() string { return Credits(OwnerCreditsPerIssue) }

// DigestRate is the price of a digest issue in words: "1 credit per 5
// feeds" ("1 credit per feed" when each feed pays its own). Pages go on
// with "with news in it".
func (p Prices) DigestRate() string {
	per := max(p.FeedsPerDigestCredit, 1)
	if per == 1 {
		return Credits(1) + " per feed"
	}
	return Credits(1) + " per " + strconv.Itoa(per) + " feeds"
}

// Credits writes n credits in words: "1 credit", "3 credits".
func Credits(n int) string {
	if n == 1 {
		return "1 credit"
	}
	return strconv.Itoa(n) + " credits"
}
