// Package retention decides which old rows the database no longer needs
// and deletes them in bounded batches, so storage stays flat however long
// an installation runs: sent email, the content of old posts, old charges,
// the poll log and issued digest entries.
//
// It owns the rules (how long each kind of row is kept, and what must
// never go: a post's identity while its feed may still list it, an
// account's newest ledger entry, purchases, grants, email not yet
// settled) and the walk that applies them. It must not decide anything
// about delivery or charging, and it never touches a row younger than its
// table's keep.
package retention

import (
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Policy is how long each kind of row is kept.
type Policy struct {
	// Outbox: settled email (sent, failed, expired). Bounces name the
	// email they return (VERP); one arriving later than this finds
	// nothing and is ignored. MTAs give up retrying after about 5 days.
	Outbox time.Duration
	// ItemContent: a post's content and media, after it was first seen.
	// Its identity, link, title and dates stay.
	ItemContent time.Duration
	// ItemBehind: a post older than ItemContent is forgotten entirely
	// when its date is more than this before the newest post of its feed:
	// if the feed lists it again it is ignored as "more than 7 days older
	// than the newest item seen before", so forgetting it sends nothing.
	ItemBehind time.Duration
	// Charges: charge and refund entries of the ledger. Purchases,
	// grants and adjustments are kept for good, and so is each account's
	// newest entry (the balance it carries).
	Charges time.Duration
	// PollLog: the poll log behind a feed's status page.
	PollLog time.Duration
	// DigestItems: a post's place in a digest issue already assembled.
	DigestItems time.Duration
}

// The keeps of the policy serve runs with (docs/operations.md, "Storage").
const (
	day             = 24 * time.Hour
	OutboxKeep      = 30 * day
	ItemContentKeep = 90 * day
	ItemBehindKeep  = 30 * day
	ChargesKeep     = 90 * day
	PollLogKeep     = 7 * day
	DigestItemsKeep = 30 * day
)

// Default returns the policy serve runs with.
func Default() Policy {
	return Policy{
		Outbox: OutboxKeep, ItemContent: ItemContentKeep, ItemBehind: ItemBehindKeep,
		Charges: ChargesKeep, PollLog: PollLogKeep, DigestItems: DigestItemsKeep,
	}
}

// Action is what a rule does to one row.
type Action int

const (
	Keep Action = iota
	Delete
	// ClearContent empties an item's content and media, keeping the row.
	ClearContent
)

// keep is how long rows of t are kept under p.
func (p Policy) keep(t store.RetainedTable) time.Duration {
	switch t {
	case store.RetainOutbox:
		return p.Outbox
	case store.RetainItems:
		return p.ItemContent
	case store.RetainLedger:
		return p.Charges
	case store.RetainPollLog:
		return p.PollLog
	case store.RetainDigestItems:
		return p.DigestItems
	}
	return 0
}

// Old reports whether r is past its table's keep at now: the walk stops
// at the first row that is not, since rows are in the order written.
func (p Policy) Old(t store.RetainedTable, r store.RetainedRow, now time.Time) bool {
	k := p.keep(t)
	return k > 0 && now.Sub(r.At) > k
}

// Decide returns what to do with r, a row of t already Old at now.
func (p Policy) Decide(t store.RetainedTable, r store.RetainedRow) Action {
	switch t {
	case store.RetainOutbox:
		if r.State == store.OutboxSent || r.State == store.OutboxFailed || r.State == store.OutboxExpired {
			return Delete
		}
	case store.RetainItems:
		if r.Published != nil && r.Newest != nil && r.Newest.Sub(*r.Published) > max(p.ItemBehind, newitems.MaxBehindSeen) {
			return Delete
		}
		if r.HasContent {
			return ClearContent
		}
	case store.RetainLedger:
		if r.Superseded && (r.State == string(billing.KindCharge) || r.State == string(billing.KindRefund)) {
			return Delete
		}
	case store.RetainPollLog:
		return Delete
	case store.RetainDigestItems:
		if r.Superseded {
			return Delete
		}
	}
	return Keep
}
