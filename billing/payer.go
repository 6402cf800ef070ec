package billing

import (
	"strconv"
	"time"
)

// Owner-paid feeds: a feed's verified publisher (its owner) pays for its
// readers. Who pays how much for one email is decided here, in
// InstantBill and DigestBill; the store applies the bills when it charges
// and prices digest issues.

const (
	// OwnerNoticePeriod is how long readers of an owner-paid feed whose
	// owner ran out of credits have to choose to pay for it themselves
	// before they are unsubscribed.
	OwnerNoticePeriod = 14 * 24 * time.Hour
)

// FeedPayer is what the store knows about who pays for one feed of one
// reader's email.
type FeedPayer struct {
	Feed int64
	// Owner is the feed's owner (its publisher, who pays), 0 when the feed
	// is not owner-paid.
	Owner int64
	// Lapsed: the owner's credits ran out and the notice period runs.
	Lapsed bool
	// Chose: this reader chose to pay for the feed while its owner's
	// credits are out.
	Chose bool
}

// Payer returns who pays for the feed: its owner, or 0 for the reader. A
// lapsed owner still pays (and while they cannot, the feed is free during
// the notice period), except for readers who chose to pay themselves.
func (f FeedPayer) Payer() int64 {
	if f.Owner == 0 || (f.Lapsed && f.Chose) {
		return 0
	}
	return f.Owner
}

// OwnerLine is the part of one email an owner pays for.
type OwnerLine struct {
	Owner, Feed, Credits int64
}

// Bill says who pays how much for one email: Reader credits from the
// reader, and one line per owner-paid feed from its owner.
type Bill struct {
	Reader int64
	Owners []OwnerLine
}

// InstantBill returns the bill of one instant email of feed f whose
// reader would pay readerCredits (the usual price, after burst
// protection): an owner-paid feed's owner pays OwnerCreditsPerPost and
// the reader nothing; otherwise the reader pays readerCredits.
func InstantBill(f FeedPayer, readerCredits int64) Bill {
	if o := f.Payer(); o != 0 {
		return Bill{Owners: []OwnerLine{{Owner: o, Feed: f.Feed, Credits: OwnerCreditsPerPost}}}
	}
	return Bill{Reader: readerCredits}
}

// DigestBill returns the bill of one digest issue carrying feeds feeds
// (with items), of which owned are owner-paid ones (feeds not listed are
// the reader's): each owner pays OwnerCreditsPerIssue per feed of theirs
// in it, and the reader pays price(the other feeds), the usual digest
// price as if the owner-paid feeds were not in the issue. An issue of
// owner-paid feeds only costs the reader nothing.
func DigestBill(feeds int, owned []FeedPayer, price func(feeds int) int) Bill {
	var b Bill
	readerFeeds := feeds
	for _, f := range owned {
		if o := f.Payer(); o != 0 {
			b.Owners = append(b.Owners, OwnerLine{Owner: o, Feed: f.Feed, Credits: OwnerCreditsPerIssue})
			readerFeeds--
		}
	}
	if readerFeeds > 0 {
		b.Reader = int64(price(readerFeeds))
	}
	return b
}

// KeyOwnerCharge is the idempotency key of an owner's charge for feed in
// the digest email whose outbox dedupe key is dedupeKey:
// "charge:<dedupeKey>:feed:<feed>". An owner's charge for an instant
// email uses that email's own charge key (KeyOutboxCharge), so its
// refund works like any other.
func KeyOwnerCharge(dedupeKey string, feed int64) string {
	return KeyOutboxCharge(dedupeKey) + ":feed:" + strconv.FormatInt(feed, 10)
}

// OwnerChargeRange is the range of idempotency keys, lo < key < hi, of
// the owners' per-feed charges (KeyOwnerCharge) for the email whose own
// charge key is chargeKey: what giving that email's charges back must
// also give back.
func OwnerChargeRange(chargeKey string) (lo, hi string) {
	lo = chargeKey + ":feed:"
	return lo, lo + ";" // feed ids are digits, all below ';'
}

// OwnerChargeReason is the ledger reason of an owner's charge for feed:
// "owner-paid feed <feed>: " + what; the owner's page sums charges by it.
func OwnerChargeReason(feed int64, what string) string {
	return OwnerReasonPrefix(feed) + what
}

// OwnerReasonPrefix is the start of every OwnerChargeReason for feed.
func OwnerReasonPrefix(feed int64) string {
	return "owner-paid feed " + strconv.FormatInt(feed, 10) + ": "
}
