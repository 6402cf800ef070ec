package store

import (
	"context"
	"fmt"
)

// ItemsOfFeed returns up to limit items of a feed, newest first (by when
// they were seen, then id). limit ≤ 0 means all.
func (s *Store) ItemsOfFeed(ctx context.Context, feedID int64, limit int) ([]Item, error) {
	var out []Item
	q := s.DB.WithContext(ctx).Where("feed_id = ?", feedID).Order("seen_at DESC, id DESC")
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("items of feed %d: %w", feedID, err)
	}
	return out, nil
}

// CountItems counts a feed's recorded items: all of them, and those an
// ignore rule kept from delivery.
func (s *Store) CountItems(ctx context.Context, feedID int64) (all, ignored int64, err error) {
	if err = s.DB.WithContext(ctx).Model(&Item{}).Where("feed_id = ?", feedID).Count(&all).Error; err != nil {
		return 0, 0, fmt.Errorf("count items of feed %d: %w", feedID, err)
	}
	if err = s.DB.WithContext(ctx).Model(&Item{}).Where("feed_id = ? AND ignored_rule <> ''", feedID).Count(&ignored).Error; err != nil {
		return 0, 0, fmt.Errorf("count items of feed %d: %w", feedID, err)
	}
	return all, ignored, nil
}
