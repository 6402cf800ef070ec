package store

import (
	"context"
	"fmt"
	"time"
)

// SignOutEverywhere ends every way into userID's account issued before
// now: account links issued earlier stop working (users.signed_out_at, the
// check is the web's) and every API token still working is revoked, in one
// transaction. It returns how many API tokens it revoked.
func (s *Store) SignOutEverywhere(ctx context.Context, userID int64, now time.Time) (int64, error) {
	now = now.UTC()
	var revoked int64
	err := s.Tx(ctx, func(tx *Store) error {
		res := tx.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND deleted_at IS NULL", userID).
			Update("signed_out_at", now)
		if res.Error != nil {
			return fmt.Errorf("sign out user %d: %w", userID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("sign out user %d: %w", userID, ErrNotFound)
		}
		res = tx.DB.WithContext(ctx).Model(&APIToken{}).Where("user_id = ? AND revoked_at IS NULL", userID).
			Update("revoked_at", now)
		if res.Error != nil {
			return fmt.Errorf("revoke api tokens of user %d: %w", userID, res.Error)
		}
		revoked = res.RowsAffected
		return nil
	})
	return revoked, err
}
