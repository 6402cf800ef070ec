package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Pages of a person's rows for the JSON API: keyset pagination on the
// primary key, so a page costs one index range however deep it is and
// rows added meanwhile neither repeat nor go missing.

// subscriptionViews selects subscriptions (not ended) with their feed and
// digest, as SubscriptionsOfUser does.
func (s *Store) subscriptionViews(ctx context.Context, userID int64) *gorm.DB {
	return s.DB.WithContext(ctx).Table("subscriptions AS s").
		Select("s.*, f.url AS feed_url, f.title AS feed_title, f.site_url AS feed_site_url, f.state AS feed_state, COALESCE(d.name, '') AS digest_name").
		Joins("JOIN feeds f ON f.id = s.feed_id").
		Joins("LEFT JOIN digests d ON d.id = s.digest_id").
		Where("s.user_id = ? AND s.state <> ?", userID, SubEnded)
}

// SubscriptionsPage returns up to limit of userID's subscriptions (not
// ended) with ids above afterID, by id.
func (s *Store) SubscriptionsPage(ctx context.Context, userID, afterID int64, limit int) ([]SubscriptionView, error) {
	var out []SubscriptionView
	if err := s.subscriptionViews(ctx, userID).Where("s.id > ?", afterID).Order("s.id").Limit(limit).
		Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("subscriptions of user %d after %d: %w", userID, afterID, err)
	}
	return out, nil
}

// AccountSubscriptionView returns userID's subscription subID with its
// feed; an ended one, or another person's, is ErrNotFound.
func (s *Store) AccountSubscriptionView(ctx context.Context, userID, subID int64) (*SubscriptionView, error) {
	var out []SubscriptionView
	if err := s.subscriptionViews(ctx, userID).Where("s.id = ?", subID).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("subscription %d of user %d: %w", subID, userID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("subscription %d of user %d: %w", subID, userID, ErrNotFound)
	}
	return &out[0], nil
}

// LedgerPage returns up to limit of userID's ledger entries with ids
// below beforeID (0: from the newest), newest first.
func (s *Store) LedgerPage(ctx context.Context, userID, beforeID int64, limit int) ([]LedgerEntry, error) {
	q := s.DB.WithContext(ctx).Where("user_id = ?", userID)
	if beforeID > 0 {
		q = q.Where("id < ?", beforeID)
	}
	var out []LedgerEntry
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("ledger of user %d before %d: %w", userID, beforeID, err)
	}
	return out, nil
}

// AccountFeed returns feed feedID when userID has a subscription to it
// that has not ended; any other feed is ErrNotFound (an id says nothing
// of feeds the person does not follow).
func (s *Store) AccountFeed(ctx context.Context, userID, feedID int64) (*Feed, error) {
	var n int64
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).
		Where("user_id = ? AND feed_id = ? AND state <> ?", userID, feedID, SubEnded).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("feed %d of user %d: %w", feedID, userID, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("feed %d of user %d: %w", feedID, userID, ErrNotFound)
	}
	return s.FeedByID(ctx, feedID)
}
