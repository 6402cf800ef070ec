package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedmail/feedmail/billing"
)

// refundIfCharged gives back the charge with key chargeKey, once (key
// refundKey), if there is such a charge, and the charges of owners of
// owner-paid feeds made for the same email (billing.OwnerChargeRange),
// each once (billing.KeyRefund of its key). It must run inside Tx after
// lockForRefund. It reports whether any refund was written.
func (s *Store) refundIfCharged(ctx context.Context, chargeKey, refundKey, reason string) (bool, error) {
	charges, err := s.chargesOf(ctx, chargeKey)
	if err != nil {
		return false, err
	}
	refunded := false
	for _, c := range charges {
		if c.Amount == 0 {
			continue // a free line ("burst: free"): nothing to give back
		}
		key := billing.KeyRefund(c.IdempotencyKey)
		if c.IdempotencyKey == chargeKey {
			key = refundKey
		}
		r, err := s.postLedgerEntryTx(ctx, c.UserID, LedgerRefund, -c.Amount, key, reason)
		if err != nil {
			return refunded, err
		}
		refunded = refunded || r.Applied
	}
	return refunded, nil
}

// chargesOf returns the charges made for the email whose charge key is
// chargeKey: its own, and its owners' per-feed charges.
func (s *Store) chargesOf(ctx context.Context, chargeKey string) ([]LedgerEntry, error) {
	if chargeKey == "" {
		return nil, nil
	}
	lo, hi := billing.OwnerChargeRange(chargeKey)
	var charges []LedgerEntry
	if err := s.DB.WithContext(ctx).Where("idempotency_key = ? OR (idempotency_key > ? AND idempotency_key < ?)", chargeKey, lo, hi).
		Order("user_id").Find(&charges).Error; err != nil {
		return nil, fmt.Errorf("look up charges %s: %w", chargeKey, err)
	}
	return charges, nil
}

// lockForRefund locks, in id order, the row of userID and of every owner
// whose charge for the email with charge key chargeKey a refund may give
// back (chargesOf, read before locking): so a refund never waits on a
// charge locking the same rows in the other order.
func (s *Store) lockForRefund(ctx context.Context, userID int64, chargeKey string) error {
	charges, err := s.chargesOf(ctx, chargeKey)
	if err != nil {
		return err
	}
	ids := []int64{userID}
	for _, c := range charges {
		ids = append(ids, c.UserID)
	}
	slices.Sort(ids)
	locked, err := s.ledgerLockUsers(ctx, slices.Compact(ids))
	if err != nil {
		return err
	}
	if _, ok := locked[userID]; !ok {
		return fmt.Errorf("user %d: %w", userID, ErrNotFound)
	}
	return nil
}
