package billing

import (
	"math"
	"strconv"
	"time"
)

// The running-low warning. A reader whose balance will last less than
// LowWindow at their forecast rate gets one free notice (KeyLowNotice),
// once per fall below the line: LowLine turns the rate into that balance,
// in credits. The line is computed away from the charge path (it needs
// the forecast) and kept with the reader; LowLineRecheck says when to
// compute it again, so that a reader with months of credits costs one
// forecast a week, not one per email.

// LowWindow is how long a balance must last not to be running low.
const LowWindow = 14 * 24 * time.Hour

// Bounds of LowLineRecheck.
const (
	MinLowRecheck = 24 * time.Hour
	MaxLowRecheck = 7 * 24 * time.Hour
)

// LowLine returns the balance, in credits, below which a reader spending
// perDay credits a day is running low: what LowWindow costs, rounded up.
// Zero means no line: the reader spends nothing, or nothing the forecast
// can tell (feeds with too little history count for nothing until they
// have some; LowLineRecheck looks again the next day).
func LowLine(perDay float64) int64 {
	if perDay <= 0 || math.IsInf(perDay, 1) || math.IsNaN(perDay) {
		return 0
	}
	return int64(math.Ceil(min(perDay*LowWindow.Hours()/24, MaxPackCredits)))
}

// LowLineRecheck returns when to compute a reader's line again: after half
// the time their balance above the line lasts at perDay credits a day
// (the rate may change meanwhile), within [MinLowRecheck, MaxLowRecheck].
// A reader already below the line, or with unknown paid feeds whose
// history grows daily, is rechecked after MinLowRecheck; one spending
// nothing after MaxLowRecheck.
func LowLineRecheck(balance, line int64, perDay float64, unknown int) time.Duration {
	if unknown > 0 {
		return MinLowRecheck
	}
	if perDay <= 0 || math.IsNaN(perDay) {
		return MaxLowRecheck
	}
	above := float64(balance - line)
	if above <= 0 {
		return MinLowRecheck
	}
	half := above / perDay / 2 * float64(24*time.Hour)
	if half >= float64(MaxLowRecheck) {
		return MaxLowRecheck
	}
	return max(time.Duration(half), MinLowRecheck)
}

// SpreadRecheck returns d shortened by a share in [0, RecheckSpread) that
// depends only on the reader: lines computed together (every reader after
// an upgrade or a bulk import) come due again over a quarter of d rather
// than all in the same minute a week later, so the pass never has to catch
// up a whole population at once. Earlier is always safe: a line is only
// ever looked at sooner than LowLineRecheck asked.
func SpreadRecheck(userID int64, d time.Duration) time.Duration {
	// splitmix64's finaliser: consecutive ids land far apart.
	x := uint64(userID) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	share := float64(x>>11) / (1 << 53) * RecheckSpread
	return d - time.Duration(share*float64(d))
}

// RecheckSpread is the most of a recheck interval SpreadRecheck takes off.
const RecheckSpread = 0.25

// KeyLowNotice is the outbox dedupe key of the running-low notice for user
// in one notice episode (as KeyCreditsNotice): "lowcredits:<user>:<episode>".
func KeyLowNotice(user, episode int64) string {
	return "lowcredits:" + strconv.FormatInt(user, 10) + ":" + strconv.FormatInt(episode, 10)
}

// KeyReceipt is the outbox dedupe key of the receipt for the purchase
// paid in Checkout Session session: "receipt:<session>", one per purchase.
func KeyReceipt(session string) string { return Key("receipt", session) }
