package digest

// FeedsPerCredit is how many feeds with items one digest credit pays for.
const FeedsPerCredit = 5

// Charge returns the credits a digest issue costs: one per FeedsPerCredit
// feeds that have items in it, rounded up (2 feeds → 1, 6 → 2, 14 → 3). An
// issue with no feeds (an empty slot, which sends nothing) costs 0; so does
// a negative count, which only a bug can produce.
func Charge(feedsWithItems int) int {
	if feedsWithItems <= 0 {
		return 0
	}
	n := feedsWithItems / FeedsPerCredit
	if feedsWithItems%FeedsPerCredit != 0 {
		n++
	}
	return n
}
