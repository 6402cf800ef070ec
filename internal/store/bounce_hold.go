package store

import (
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// The bounce hold: a delivery of posts (an item email or a digest issue)
// that goes by email to an address marked bouncing (users.bouncing_since)
// waits, held with HoldBouncing, until the mark is cleared
// (ClearBouncing) or the hold expires (ExpireHeld). Whatever it costs the
// reader: a free row (a post that came in a burst, a digest whose feeds
// the owners pay for) waits like a paid one, because mail to a dead
// address hurts the sender's reputation whoever pays for it. Notices
// (confirmations, warnings) still go: the confirmation that clears the
// mark is one of them. Deliveries by another channel never go to the
// address and never wait for it.
//
// The rule is written here once, in Go (WaitsForBouncing) and in SQL
// (bounceHoldSQL); the routing of new items (fanout.go), the hold when an
// address becomes bouncing (countHardBounce) and the outbox worker before
// it sends all ask it. TestBounceHoldRuleOnce holds the two forms to each
// other.

// WaitsForBouncing reports whether a row of kind going out by channel ("" is
// email) to a person whose address was marked bouncing at bouncingSince
// (nil: not bouncing) waits, held with HoldBouncing.
func WaitsForBouncing(kind, channel string, bouncingSince *time.Time) bool {
	return bouncingSince != nil && (channel == model.ChannelEmail || channel == "") &&
		(kind == KindItem || kind == KindDigest)
}

// bounceHoldSQL is WaitsForBouncing in SQL, over the expressions giving the
// row's kind, its channel and its person's bouncing_since; it has no
// parameter, so it fits any statement.
func bounceHoldSQL(kind, channel, bouncingSince string) string {
	return "(" + bouncingSince + " IS NOT NULL AND " + channel + " IN ('" + model.ChannelEmail + "', '') AND " +
		kind + " IN ('" + KindItem + "', '" + KindDigest + "'))"
}
