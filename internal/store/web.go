package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// Queries the web pages need (signup, account, unsubscribe). They are named
// after the page that uses them so they do not collide with the workers'
// queries; each checks ownership in SQL where a person acts on their own rows.

// ErrDigestNameTaken is returned by SaveAccountDigest when the person already
// has another digest with that name.
var ErrDigestNameTaken = errors.New("digest name already used")

// SetFeedMetaIfEmpty records a feed's title and site address as learned at
// signup, without overwriting what the poller has already stored.
func (s *Store) SetFeedMetaIfEmpty(ctx context.Context, feedID int64, title, siteURL string) error {
	db := s.DB.WithContext(ctx).Model(&Feed{})
	if title != "" {
		if err := db.Where("id = ? AND title = ''", feedID).Update("title", title).Error; err != nil {
			return fmt.Errorf("feed %d title: %w", feedID, err)
		}
	}
	if siteURL != "" {
		if err := s.DB.WithContext(ctx).Model(&Feed{}).Where("id = ? AND site_url = ''", feedID).
			Update("site_url", siteURL).Error; err != nil {
			return fmt.Errorf("feed %d site: %w", feedID, err)
		}
	}
	return nil
}

// AccountDigest returns digest id if it belongs to userID, else ErrNotFound.
func (s *Store) AccountDigest(ctx context.Context, userID, id int64) (*Digest, error) {
	var d Digest
	if err := s.DB.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&d).Error; err != nil {
		return nil, fmt.Errorf("digest %d of user %d: %w", id, userID, notFound(err))
	}
	return &d, nil
}

// SaveAccountDigest creates (id 0) or changes (id of one of userID's
// digests) a digest: name, schedule and zone, with the next slot the
// schedule's first after the store clock's now. A name another of the
// person's digests has (case-insensitively) gives ErrDigestNameTaken; an id
// that is not theirs gives ErrNotFound; a bad name ErrBadDigestName. Unlike
// SetDigest, which finds its digest by name, this one renames by id.
func (s *Store) SaveAccountDigest(ctx context.Context, userID, id int64, name string, sched DigestSchedule) (*Digest, error) {
	name, err := CleanDigestName(name)
	if err != nil {
		return nil, err
	}
	now := s.now()
	next := sched.Next(now)
	if next.IsZero() {
		return nil, fmt.Errorf("save digest %q: schedule %s has no next slot", name, sched.Spec())
	}
	var out Digest
	err = s.Tx(ctx, func(tx *Store) error {
		var clash int64
		if err := tx.DB.Model(&Digest{}).Where("user_id = ? AND LOWER(name) = LOWER(?) AND id <> ?", userID, name, id).
			Count(&clash).Error; err != nil {
			return err
		}
		if clash > 0 {
			return fmt.Errorf("%w: %q", ErrDigestNameTaken, name)
		}
		if id == 0 {
			out = Digest{UserID: userID, Name: name, Schedule: sched.Spec(), Timezone: sched.Location().String(),
				NextSlotAt: utc(next), CreatedAt: now}
			return tx.DB.Create(&out).Error
		}
		res := tx.DB.Model(&Digest{}).Where("id = ? AND user_id = ?", id, userID).Updates(map[string]any{
			"name": name, "schedule": sched.Spec(), "timezone": sched.Location().String(), "next_slot_at": utc(next)})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.DB.Take(&out, id).Error
	})
	if err != nil {
		return nil, fmt.Errorf("save digest %q of user %d: %w", name, userID, err)
	}
	return &out, nil
}

// SetSubscriptionDelivery switches one of userID's subscriptions to instant
// delivery (digestID nil) or into one of their digests. Subscriptions and
// digests of other people give ErrNotFound.
func (s *Store) SetSubscriptionDelivery(ctx context.Context, userID, subID int64, digestID *int64) error {
	return s.Tx(ctx, func(tx *Store) error {
		if digestID != nil {
			var n int64
			if err := tx.DB.Model(&Digest{}).Where("id = ? AND user_id = ?", *digestID, userID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("digest %d of user %d: %w", *digestID, userID, ErrNotFound)
			}
		}
		res := tx.DB.Model(&Subscription{}).Where("id = ? AND user_id = ?", subID, userID).Update("digest_id", digestID)
		if res.Error != nil {
			return fmt.Errorf("subscription %d delivery: %w", subID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("subscription %d of user %d: %w", subID, userID, ErrNotFound)
		}
		return nil
	})
}

// AccountSubscription returns subscription subID if it belongs to userID.
func (s *Store) AccountSubscription(ctx context.Context, userID, subID int64) (*Subscription, error) {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Where("id = ? AND user_id = ?", subID, userID).Take(&sub).Error; err != nil {
		return nil, fmt.Errorf("subscription %d of user %d: %w", subID, userID, notFound(err))
	}
	return &sub, nil
}

// SubscriptionsOfDigest lists the subscriptions (not ended) delivered into a
// digest, with their feeds.
func (s *Store) SubscriptionsOfDigest(ctx context.Context, digestID int64) ([]SubscriptionView, error) {
	var out []SubscriptionView
	err := s.DB.WithContext(ctx).Table("subscriptions AS s").
		Select("s.*, f.url AS feed_url, f.title AS feed_title, f.state AS feed_state, COALESCE(d.name, '') AS digest_name").
		Joins("JOIN feeds f ON f.id = s.feed_id").
		Joins("LEFT JOIN digests d ON d.id = s.digest_id").
		Where("s.digest_id = ? AND s.state <> ?", digestID, SubEnded).
		Order("s.id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("subscriptions of digest %d: %w", digestID, err)
	}
	return out, nil
}

// EndDigestSubscriptions ends every subscription delivered into a digest
// (idempotent) and returns how many it ended now.
func (s *Store) EndDigestSubscriptions(ctx context.Context, digestID int64, reason string) (int, error) {
	n := 0
	err := s.Tx(ctx, func(tx *Store) error {
		var subs []Subscription
		if err := tx.DB.Where("digest_id = ? AND state <> ?", digestID, SubEnded).Find(&subs).Error; err != nil {
			return err
		}
		for _, sub := range subs {
			if err := tx.DB.Model(&Subscription{}).Where("id = ? AND state <> ?", sub.ID, SubEnded).
				Updates(map[string]any{"state": SubEnded, "ended_at": tx.now(), "ended_reason": reason}).Error; err != nil {
				return err
			}
			if err := tx.recountSubscribers(sub.FeedID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("end subscriptions of digest %d: %w", digestID, err)
	}
	return n, nil
}

// FeedForStatus returns the feed with this URL for the public status page,
// with its newest polls (newest first).
func (s *Store) FeedForStatus(ctx context.Context, url string, polls int) (*Feed, []PollLog, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Where("url = ?", url).Take(&f).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, fmt.Errorf("feed %s: %w", url, ErrNotFound)
		}
		return nil, nil, fmt.Errorf("feed %s: %w", url, err)
	}
	var logs []PollLog
	if err := s.DB.WithContext(ctx).Where("feed_id = ?", f.ID).Order("polled_at DESC, id DESC").
		Limit(polls).Find(&logs).Error; err != nil {
		return nil, nil, fmt.Errorf("polls of feed %d: %w", f.ID, err)
	}
	return &f, logs, nil
}
