package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/feedmail/feedmail/billing"
)

// Charging owner-paid feeds (billing.InstantBill, DigestBill): before the
// readers are charged, ChargeOutbox charges owners here, in the same
// transaction. An instant email of an owner-paid feed is charged to the
// owner under the email's own charge key (so it is refunded like any
// other) and the reader pays nothing; a digest issue charges each owner of
// a feed in it under billing.KeyOwnerCharge, and its reader pays the share
// priced at assembly. An owner whose balance cannot cover a line is not
// charged for it: the email goes out (the readers' notice period is free
// for them), and the feed's lapse starts (readers are told by
// NotifyOwnerLapses). A successful charge ends the feed's lapse.

// ownerCharge is one owner line of one claimed row.
type ownerCharge struct {
	row    int // index in the claimed rows
	line   billing.OwnerLine
	key    string
	reason string
}

// payerRow is one owner-paid feed of one outbox row, as queried.
type payerRow struct {
	RowID, FeedID, Owner int64
	Lapsed, Chose        bool
}

func (p payerRow) payer() billing.FeedPayer {
	return billing.FeedPayer{Feed: p.FeedID, Owner: p.Owner, Lapsed: p.Lapsed, Chose: p.Chose}
}

// payerCols are the columns of a payerRow, given fo (feed_owners) and the
// subscription id expression sub.
func payerCols(sub string) string {
	return `fo.user_id AS owner, CASE WHEN fo.lapsed_at IS NULL THEN 0 ELSE 1 END AS lapsed,
  CASE WHEN EXISTS (SELECT 1 FROM owner_paid_choices c WHERE c.subscription_id = ` + sub + `) THEN 1 ELSE 0 END AS chose`
}

// chargeOwnerPaid is ChargeOutbox's first step. It returns, by row index,
// whether the row is decided here (an instant email of an owner-paid
// feed, whose outcome it set); digest rows are left to the reader's step.
func (s *Store) chargeOwnerPaid(ctx context.Context, leaseOwner string, rows []*OutboxRow, out []ChargeOutcome) ([]bool, error) {
	skip := make([]bool, len(rows))
	payers, err := s.ownerPayersOfRows(ctx, leaseOwner, rows)
	if err != nil || len(payers) == 0 {
		return skip, err
	}
	lines := ownerLinesOf(rows, payers, skip)
	if len(lines) == 0 {
		return skip, nil
	}
	people := map[int64]bool{}
	for _, r := range rows {
		people[r.UserID] = true
	}
	for _, l := range lines {
		people[l.line.Owner] = true
	}
	// Every person of the batch is locked now, in id order, so the
	// readers' step after this one waits on nobody new.
	balances, err := s.ledgerLockUsers(ctx, outboxSortedKeys(people))
	if err != nil {
		return nil, err
	}
	done, err := s.existingLedgerKeys(ctx, lines)
	if err != nil {
		return nil, err
	}
	c, paid, failed := applyOwnerLines(lines, done, balances, rows, skip, out, s.now())
	if err := s.writeCharges(ctx, c, balances); err != nil {
		return nil, err
	}
	return skip, s.markLapses(ctx, paid, failed)
}

// ownerPayersOfRows returns, by outbox row id, the owner-paid feeds of the
// rows leaseOwner still holds: the feed of an instant email, the owned
// feeds with items in a digest issue.
func (s *Store) ownerPayersOfRows(ctx context.Context, leaseOwner string, rows []*OutboxRow) (map[int64][]billing.FeedPayer, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	heldBy := func(q *psQuery, kind string) *psQuery {
		return q.sql(" AND o.kind = ").arg(kind, "text").sql(" AND o.lease_owner = ").arg(leaseOwner, "text").
			sql(" AND o.state = ").arg(OutboxQueued, "text")
	}
	q := s.psNew().sql(`SELECT o.id AS row_id, s.feed_id, ` + payerCols("s.id") + `
FROM outbox o JOIN subscriptions s ON s.id = o.subscription_id JOIN feed_owners fo ON fo.feed_id = s.feed_id
WHERE o.id`).in(ids)
	q = heldBy(q, KindItem).sql(`
UNION ALL
SELECT DISTINCT o.id AS row_id, di.feed_id, ` + payerCols("di.subscription_id") + `
FROM outbox o JOIN digest_items di ON di.issue_id = o.issue_id JOIN feed_owners fo ON fo.feed_id = di.feed_id
WHERE o.id`).in(ids)
	res, err := heldBy(q, KindDigest).query(ctx, s.psConn(ctx))
	if err != nil {
		return nil, fmt.Errorf("owner-paid feeds of claimed email: %w", err)
	}
	defer res.Close()
	var found []payerRow
	for res.Next() {
		var p payerRow
		if err := res.Scan(&p.RowID, &p.FeedID, &p.Owner, &p.Lapsed, &p.Chose); err != nil {
			return nil, fmt.Errorf("owner-paid feeds of claimed email: %w", err)
		}
		found = append(found, p)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("owner-paid feeds of claimed email: %w", err)
	}
	out := make(map[int64][]billing.FeedPayer, len(found))
	for _, p := range found {
		out[p.RowID] = append(out[p.RowID], p.payer())
	}
	return out, nil
}

// ownerLinesOf returns the owner lines of the rows (billing's bills) and
// marks the instant rows whose bill has one in skip.
func ownerLinesOf(rows []*OutboxRow, payers map[int64][]billing.FeedPayer, skip []bool) []ownerCharge {
	var lines []ownerCharge
	for i, r := range rows {
		fs, ok := payers[r.ID]
		if !ok {
			continue
		}
		switch r.Kind {
		case KindItem:
			b := billing.InstantBill(fs[0], int64(r.Credits))
			if len(b.Owners) == 1 {
				key, _ := outboxKeys(r)
				l := b.Owners[0]
				lines = append(lines, ownerCharge{row: i, line: l, key: key,
					reason: billing.OwnerChargeReason(l.Feed, "item email "+r.DedupeKey)})
				skip[i] = true
			}
		case KindDigest:
			// Only the owners' lines: the reader's share was priced at
			// assembly with the same bill (priceIssues).
			for _, l := range billing.DigestBill(len(fs), fs, func(int) int { return 0 }).Owners {
				lines = append(lines, ownerCharge{row: i, line: l, key: billing.KeyOwnerCharge(r.DedupeKey, l.Feed),
					reason: billing.OwnerChargeReason(l.Feed, "digest email "+r.DedupeKey)})
			}
		}
	}
	return lines
}

// existingLedgerKeys returns which of the lines' keys are in the ledger.
func (s *Store) existingLedgerKeys(ctx context.Context, lines []ownerCharge) (map[string]bool, error) {
	ks := make([]string, len(lines))
	for i, l := range lines {
		ks[i] = l.key
	}
	var existing []string
	if err := s.DB.WithContext(ctx).Model(&LedgerEntry{}).Where("idempotency_key IN ?", ks).
		Pluck("idempotency_key", &existing).Error; err != nil {
		return nil, fmt.Errorf("look up owner charges: %w", err)
	}
	done := make(map[string]bool, len(existing))
	for _, k := range existing {
		done[k] = true
	}
	return done, nil
}

// applyOwnerLines charges each line not charged before to its owner's
// balance (updated in place) and sets the outcome of the instant rows
// decided here. It returns the entries to write, and the feeds whose
// owner paid and whose owner could not.
func applyOwnerLines(lines []ownerCharge, done map[string]bool, balances map[int64]int64, rows []*OutboxRow,
	skip []bool, out []ChargeOutcome, now time.Time) (c charges, paid, failed map[int64]bool) {
	c = charges{changed: map[int64]bool{}, heldUsers: map[int64]bool{}}
	paid, failed = map[int64]bool{}, map[int64]bool{}
	for _, l := range lines {
		outcome := ChargedBefore
		if !done[l.key] {
			next, err := applyAmount(balances[l.line.Owner], -l.line.Credits)
			if err != nil {
				outcome, failed[l.line.Feed] = ChargeFree, true
			} else {
				balances[l.line.Owner], c.changed[l.line.Owner], paid[l.line.Feed] = next, true, true
				c.entries = append(c.entries, LedgerEntry{UserID: l.line.Owner, Kind: LedgerCharge, Amount: -l.line.Credits,
					BalanceAfter: next, IdempotencyKey: l.key, Reason: l.reason, CreatedAt: now})
				outcome = Charged
			}
		}
		if skip[l.row] {
			out[l.row] = outcome
		}
	}
	return c, paid, failed
}

// markLapses ends the lapse of the feeds whose owner paid (and drops
// their readers' choices: the owner pays for everyone again) and starts
// one for the feeds whose owner could not, unless it runs already.
func (s *Store) markLapses(ctx context.Context, paid, failed map[int64]bool) error {
	var ended []int64
	for f := range paid {
		if !failed[f] {
			ended = append(ended, f)
		}
	}
	sort.Slice(ended, func(a, b int) bool { return ended[a] < ended[b] })
	db := s.DB.WithContext(ctx)
	if len(ended) > 0 {
		if err := db.Exec(`DELETE FROM owner_paid_choices WHERE feed_id IN (SELECT feed_id FROM feed_owners
WHERE feed_id IN ? AND lapsed_at IS NOT NULL)`, ended).Error; err != nil {
			return fmt.Errorf("drop choices of paid feeds: %w", err)
		}
		if err := db.Model(&FeedOwner{}).Where("feed_id IN ? AND lapsed_at IS NOT NULL", ended).
			UpdateColumns(map[string]any{"lapsed_at": nil, "swept_at": nil}).Error; err != nil {
			return fmt.Errorf("end lapses: %w", err)
		}
	}
	if len(failed) > 0 {
		if err := db.Exec(`UPDATE feed_owners SET lapsed_at = ?, swept_at = NULL, lapse_seq = lapse_seq + 1
WHERE feed_id IN ? AND (lapsed_at IS NULL OR swept_at IS NOT NULL)`, s.now(), outboxSortedKeys(failed)).Error; err != nil {
			return fmt.Errorf("start lapses: %w", err)
		}
	}
	return nil
}

// ownerCreditsUsed returns the credits charged to owner for feed, all
// time and since since.
func (s *Store) ownerCreditsUsed(ctx context.Context, owner, feed int64, since time.Time) (all, recent int64, err error) {
	var r struct{ Total, Recent int64 }
	err = s.DB.WithContext(ctx).Raw(`SELECT COALESCE(SUM(-amount), 0) AS total,
  COALESCE(SUM(CASE WHEN created_at >= ? THEN -amount ELSE 0 END), 0) AS recent
FROM ledger_entries WHERE user_id = ? AND kind = ? AND reason LIKE ?`,
		since, owner, LedgerCharge, billing.OwnerReasonPrefix(feed)+"%").Scan(&r).Error
	if err != nil {
		return 0, 0, fmt.Errorf("credits used by owner %d for feed %d: %w", owner, feed, err)
	}
	return r.Total, r.Recent, nil
}

// ownedFeedsOfIssues returns, by issue id, the owner-paid feeds with
// items in each issue, for pricing the reader's share.
func (s *Store) ownedFeedsOfIssues(ctx context.Context, issues []int64) (map[int64][]billing.FeedPayer, error) {
	out := map[int64][]billing.FeedPayer{}
	if len(issues) == 0 {
		return out, nil
	}
	var found []payerRow
	if err := s.DB.WithContext(ctx).Raw(`SELECT DISTINCT di.issue_id AS row_id, di.feed_id, `+payerCols("di.subscription_id")+`
FROM digest_items di JOIN feed_owners fo ON fo.feed_id = di.feed_id WHERE di.issue_id IN ?`, issues).Scan(&found).Error; err != nil {
		return nil, fmt.Errorf("owner-paid feeds of issues: %w", err)
	}
	for _, p := range found {
		out[p.RowID] = append(out[p.RowID], p.payer())
	}
	return out, nil
}
