package store

import (
	"context"
	"fmt"
)

// ledgerPage is how many entries EachLedgerEntry reads at a time.
const ledgerPage = 1000

// EachLedgerEntry calls fn with each of userID's ledger entries, oldest
// first, reading them a page at a time so that a long ledger streams
// (the CSV download) instead of loading at once. It stops at fn's first
// error and returns it.
func (s *Store) EachLedgerEntry(ctx context.Context, userID int64, fn func(LedgerEntry) error) error {
	var after int64
	for {
		var page []LedgerEntry
		if err := s.DB.WithContext(ctx).Where("user_id = ? AND id > ?", userID, after).Order("id").
			Limit(ledgerPage).Find(&page).Error; err != nil {
			return fmt.Errorf("ledger of user %d: %w", userID, err)
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < ledgerPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}
