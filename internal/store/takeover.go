package store

import (
	"context"
	"slices"
	"time"
)

// A claim may hand out work whose previous holder's lease ran out before
// it finished or gave the work back: that holder died (killed, its machine
// gone) or stalled. Each claim reads the previous holder of what it takes
// in the same statement (or, on SQLite, the same transaction) and reports
// such takeovers, at most one report per claim, through
// Options.OnTakeover.

// Kinds of leased work a Takeover names.
const (
	TakeoverOutbox  = "outbox"  // queued deliveries (ClaimOutbox)
	TakeoverDigests = "digests" // digests whose slot has come (ClaimDueDigests)
	TakeoverFeeds   = "feeds"   // due feeds leased one by one (ClaimDueFeeds on SQLite)
	TakeoverHosts   = "hosts"   // hosts whose due feeds are polled (ClaimDueFeeds on Postgres)
)

// Takeover is the part of one claim that another holder had leased and
// let run out.
type Takeover struct {
	Kind string // one of the Takeover* kinds
	By   string // the claiming owner
	// Count is how many rows (outbox rows, digests, feeds or hosts) the
	// claim took over; From their previous holders, sorted, each once.
	Count int
	From  []string
	// Expired is the longest time one of those leases had been expired at
	// the claim.
	Expired time.Duration
}

// prevLease is the lease a claimed row carried just before the claim.
type prevLease struct {
	Owner string
	Until *time.Time
}

// takeoverOf returns the takeover among the previous leases of the rows
// one claim by owner at now took, or nil when none was another holder's
// expired lease: a row nobody held (owner empty, the lease given back),
// or one owner held itself, is no takeover.
func takeoverOf(kind, owner string, now time.Time, prev []prevLease) *Takeover {
	var t *Takeover
	for _, p := range prev {
		if p.Owner == "" || p.Owner == owner || p.Until == nil || p.Until.After(now) {
			continue
		}
		if t == nil {
			t = &Takeover{Kind: kind, By: owner}
		}
		t.Count++
		if !slices.Contains(t.From, p.Owner) {
			t.From = append(t.From, p.Owner)
		}
		t.Expired = max(t.Expired, now.Sub(*p.Until))
	}
	if t != nil {
		slices.Sort(t.From)
	}
	return t
}

// reportTakeover hands the takeover among prev (see takeoverOf) to
// Options.OnTakeover, if both are there.
func (s *Store) reportTakeover(kind, owner string, now time.Time, prev []prevLease) {
	if s.onTakeover == nil {
		return
	}
	if t := takeoverOf(kind, owner, now, prev); t != nil {
		s.onTakeover(*t)
	}
}

// PrevCols are the columns a Postgres claim returns beside the claimed
// row (embedded in the row it scans into): the lease of the row "prev"
// its statement picked (prevReturning).
type PrevCols struct {
	PrevOwner string     `gorm:"column:prev_owner;->;-:migration"`
	PrevUntil *time.Time `gorm:"column:prev_until;->;-:migration"`
}

// prevReturning is the RETURNING list of PrevCols.
const prevReturning = "prev.lease_owner AS prev_owner, prev.lease_until AS prev_until"

func (c PrevCols) prevLease() prevLease { return prevLease{Owner: c.PrevOwner, Until: c.PrevUntil} }

// claimPicked is a claim on SQLite (one writer at a time), in one
// transaction: it reads the rows pick selects (id, lease_owner,
// lease_until), then runs set, an UPDATE … SET without its WHERE, on
// those rows, scanning RETURNING * into out. It returns the leases the
// rows carried before.
func (s *Store) claimPicked(ctx context.Context, pick string, pickArgs []any, set string, setArgs []any, out any) ([]prevLease, error) {
	var prev []prevLease
	err := s.Tx(ctx, func(tx *Store) error {
		var rows []struct {
			ID         int64
			LeaseOwner string
			LeaseUntil *time.Time
		}
		if err := tx.DB.Raw(pick, pickArgs...).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			prev = append(prev, prevLease{Owner: r.LeaseOwner, Until: r.LeaseUntil})
		}
		return tx.DB.Raw(set+" WHERE id IN ? RETURNING *", append(setArgs, ids)...).Scan(out).Error
	})
	return prev, err
}
