package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/feedmail/feedmail/billing"
)

// outboxKeys returns the ledger keys of one outbox row, as billing names
// them: its charge and the refund of that charge. Every charge, refund and
// expiry of a row asks it, so the scheme is billing's alone.
func outboxKeys(row *OutboxRow) (charge, refund string) {
	return billing.KeyOutboxCharge(row.DedupeKey), billing.KeyOutboxRefund(row.DedupeKey)
}

// CreditNotice builds the free out-of-credits notice for userID in notice
// episode episode (see noticeEpisode): its outbox dedupe key and content.
type CreditNotice func(userID, episode int64) (dedupeKey string, n Notice)

// ChargeOutcome is what ChargeOutbox did with one row.
type ChargeOutcome int

// Charge outcomes.
const (
	ChargeFree     ChargeOutcome = iota // costs nothing: send it
	Charged                             // charged now: send it
	ChargedBefore                       // an earlier attempt paid: send it, charge nothing
	HeldForCredits                      // the balance did not cover it: now held
	LeaseLost                           // no longer this worker's: leave it alone
)

func (c ChargeOutcome) String() string {
	switch c {
	case ChargeFree:
		return "free"
	case Charged:
		return "charged"
	case ChargedBefore:
		return "charged-before"
	case HeldForCredits:
		return "held"
	case LeaseLost:
		return "lease-lost"
	}
	return fmt.Sprintf("ChargeOutcome(%d)", int(c))
}

// Sendable reports whether the row may go out.
func (c ChargeOutcome) Sendable() bool {
	return c == ChargeFree || c == Charged || c == ChargedBefore
}

// ChargeOutbox charges the claimed rows (all of which owner holds) before
// they are sent, in one transaction. A row of 0 credits with a FreeReason
// (a burst post) is charged 0: its ledger line says why it is free, under
// the same key rule, and it is ChargeFree. Rows already charged by an earlier
// attempt (their charge key exists) are not charged again; the others are
// charged in the order given, each one if what is left of its person's
// balance covers it, and held for credits otherwise (so a 3-credit digest
// may wait while a later 1-credit email still fits). For each person with newly held rows whose
// current shortage has not been told yet (users.credit_notice_at is null),
// one free notice is queued (dedupe key from notice, so once per episode)
// and credit_notice_at is set. Rows owner no longer holds are LeaseLost.
// Owners of owner-paid feeds are charged first (chargeOwnerPaid).
// The result has one outcome per row.
func (s *Store) ChargeOutbox(ctx context.Context, owner string, rows []*OutboxRow, notice CreditNotice) ([]ChargeOutcome, error) {
	out := make([]ChargeOutcome, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	err := s.Tx(ctx, func(tx *Store) error {
		return tx.chargeOutboxTx(ctx, owner, rows, notice, out)
	})
	if err != nil {
		return nil, fmt.Errorf("charge outbox: %w", err)
	}
	return out, nil
}

// chargeOutboxTx does ChargeOutbox's work inside its transaction, setting
// out[i] for each row.
func (s *Store) chargeOutboxTx(ctx context.Context, owner string, rows []*OutboxRow, notice CreditNotice, out []ChargeOutcome) error {
	if err := s.useGenericPlans(ctx, s.psConn(ctx)); err != nil {
		return err
	}
	ownerPaid, err := s.chargeOwnerPaid(ctx, owner, rows, out)
	if err != nil {
		return err
	}
	chargeKeys, paidKeys, err := s.chargeKeysOfHeld(ctx, owner, rows, ownerPaid, out)
	if err != nil || len(paidKeys) == 0 {
		return err
	}
	userIDs, err := s.skipChargedBefore(ctx, rows, chargeKeys, paidKeys, out)
	if err != nil || len(userIDs) == 0 {
		return err
	}
	sort.Slice(userIDs, func(a, b int) bool { return userIDs[a] < userIDs[b] })
	balances, err := s.ledgerLockUsers(ctx, userIDs)
	if err != nil {
		return err
	}
	c, err := chargeRows(rows, chargeKeys, balances, out, s.now())
	if err != nil {
		return err
	}
	if err := s.writeCharges(ctx, c, balances); err != nil {
		return err
	}
	return s.holdForCredits(ctx, owner, c, notice)
}

// chargeKeysOfHeld marks the rows owner no longer holds LeaseLost and the
// free ones ChargeFree, leaves the rows decided by chargeOwnerPaid (done)
// as they are, and returns the charge key of each paid row (by
// row index, "" for the others) and the list of those keys.
func (s *Store) chargeKeysOfHeld(ctx context.Context, owner string, rows []*OutboxRow, done []bool, out []ChargeOutcome) ([]string, []string, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	q := s.psNew().sql("SELECT id FROM outbox WHERE lease_owner = ").arg(owner, "text").
		sql(" AND state = ").arg(OutboxQueued, "text").sql(" AND id").in(ids)
	mine, err := psScan[int64](ctx, s.psConn(ctx), q)
	if err != nil {
		return nil, nil, fmt.Errorf("check leases: %w", err)
	}
	held := make(map[int64]bool, len(mine))
	for _, id := range mine {
		held[id] = true
	}
	chargeKeys := make([]string, len(rows))
	var paidKeys []string
	for i, r := range rows {
		switch {
		case done[i]:
		case !held[r.ID]:
			out[i] = LeaseLost
		case r.Credits <= 0 && r.FreeReason == "":
			out[i] = ChargeFree
		default:
			chargeKeys[i], _ = outboxKeys(r)
			paidKeys = append(paidKeys, chargeKeys[i])
		}
	}
	return chargeKeys, paidKeys, nil
}

// skipChargedBefore marks the paid rows whose charge exists already
// ChargedBefore, and returns the people of the rows still to charge, in
// the order first met.
func (s *Store) skipChargedBefore(ctx context.Context, rows []*OutboxRow, chargeKeys, paidKeys []string, out []ChargeOutcome) ([]int64, error) {
	existing, err := psScan[string](ctx, s.psConn(ctx),
		inList(s.psNew().sql("SELECT idempotency_key FROM ledger_entries WHERE idempotency_key"), paidKeys, "text"))
	if err != nil {
		return nil, fmt.Errorf("look up charges: %w", err)
	}
	done := make(map[string]bool, len(existing))
	for _, k := range existing {
		done[k] = true
	}
	var userIDs []int64
	seen := map[int64]bool{}
	for i, r := range rows {
		if chargeKeys[i] == "" {
			continue
		}
		if done[chargeKeys[i]] {
			out[i] = ChargedBefore
			if r.Credits <= 0 {
				// Its line of 0 is written already: nothing left to do.
				out[i], chargeKeys[i] = ChargeFree, ""
			}
			continue
		}
		if !seen[r.UserID] {
			seen[r.UserID] = true
			userIDs = append(userIDs, r.UserID)
		}
	}
	return userIDs, nil
}

// charges is what chargeRows decided: the ledger entries to write, the
// people whose balance changed, and the rows (and their people) to hold
// for credits.
type charges struct {
	entries   []LedgerEntry
	changed   map[int64]bool
	heldIDs   []int64
	heldUsers map[int64]bool
}

// chargeRows charges the rows still to charge, in order, against balances
// (updated in place): each row its person's remaining balance covers is
// Charged, the others HeldForCredits.
func chargeRows(rows []*OutboxRow, chargeKeys []string, balances map[int64]int64, out []ChargeOutcome, now time.Time) (charges, error) {
	c := charges{changed: map[int64]bool{}, heldUsers: map[int64]bool{}}
	for i, r := range rows {
		if chargeKeys[i] == "" || out[i] == ChargedBefore {
			continue
		}
		bal, ok := balances[r.UserID]
		if !ok {
			return c, fmt.Errorf("outbox %d: user %d: %w", r.ID, r.UserID, ErrNotFound)
		}
		amount := -int64(max(r.Credits, 0))
		next, err := applyAmount(bal, amount)
		if err != nil {
			out[i] = HeldForCredits
			c.heldIDs = append(c.heldIDs, r.ID)
			c.heldUsers[r.UserID] = true
			continue
		}
		balances[r.UserID], c.changed[r.UserID] = next, true
		c.entries = append(c.entries, LedgerEntry{UserID: r.UserID, Kind: LedgerCharge, Amount: amount,
			BalanceAfter: next, IdempotencyKey: chargeKeys[i], Reason: chargeReason(r), CreatedAt: now})
		out[i] = Charged
		if amount == 0 {
			out[i] = ChargeFree
		}
	}
	return c, nil
}

// chargeReason is the ledger reason of the charge for row r: "item email
// item:5:7", and for a row sent free, why: "item email item:5:7 (burst:
// free)".
func chargeReason(r *OutboxRow) string {
	reason := r.Kind + " email " + r.DedupeKey
	if r.Credits <= 0 && r.FreeReason != "" {
		reason += " (" + r.FreeReason + ")"
	}
	return reason
}

// writeCharges inserts the charge entries and writes the changed balances:
// one statement each, of the same text whatever the number of rows (on
// Postgres).
func (s *Store) writeCharges(ctx context.Context, c charges, balances map[int64]int64) error {
	if len(c.entries) == 0 {
		return nil
	}
	conn := s.psConn(ctx)
	for start, chunk := 0, s.psChunkOf(len(c.entries)); start < len(c.entries); start += chunk {
		part := c.entries[start:min(start+chunk, len(c.entries))]
		if _, err := s.insertLedgerEntries(part).exec(ctx, conn); err != nil {
			return fmt.Errorf("insert charges: %w", err)
		}
	}
	users := outboxSortedKeys(c.changed)
	for start, chunk := 0, s.psChunkOf(len(users)); start < len(users); start += chunk {
		part := users[start:min(start+chunk, len(users))]
		bals := make([]int64, len(part))
		for i, u := range part {
			bals[i] = balances[u]
		}
		q := s.psNew().psRowsV(balanceCols, []any{part, bals}, len(part)).
			sql("\nUPDATE users SET balance = v.balance FROM v WHERE users.id = v.id")
		if _, err := q.exec(ctx, conn); err != nil {
			return fmt.Errorf("update balances: %w", err)
		}
	}
	return nil
}

// balanceCols are the per-row values of writeCharges' balance update.
var balanceCols = []psCol{{"id", "bigint"}, {"balance", "bigint"}}

// holdForCredits holds the rows chargeRows could not charge and queues
// the out-of-credits notice of each of their people not told yet.
func (s *Store) holdForCredits(ctx context.Context, owner string, c charges, notice CreditNotice) error {
	if len(c.heldIDs) == 0 {
		return nil
	}
	if err := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET state = ?, last_error = ?, lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ?`, OutboxHeld, HoldCredits, c.heldIDs, owner).Error; err != nil {
		return fmt.Errorf("hold for credits: %w", err)
	}
	for _, u := range outboxSortedKeys(c.heldUsers) {
		if err := s.noticeShortage(ctx, u, notice); err != nil {
			return err
		}
	}
	return nil
}

// noticeShortage queues the out-of-credits notice for userID unless this
// shortage was already told. It runs inside Tx with the user locked.
func (s *Store) noticeShortage(ctx context.Context, userID int64, notice CreditNotice) error {
	if notice == nil {
		return nil
	}
	res := s.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND credit_notice_at IS NULL", userID).
		UpdateColumn("credit_notice_at", s.now())
	if res.Error != nil {
		return fmt.Errorf("mark credit notice: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil
	}
	ep, err := s.noticeEpisode(ctx, userID)
	if err != nil {
		return err
	}
	key, n := notice(userID, ep)
	if _, err := s.QueueNotice(ctx, userID, key, n); err != nil {
		return err
	}
	return nil
}
