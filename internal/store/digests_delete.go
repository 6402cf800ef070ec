package store

import (
	"context"
	"errors"
	"fmt"
)

// What DeleteDigest does with the feeds the digest delivered.
const (
	DigestFeedsInstant     = "instant"     // each post in its own email from now on
	DigestFeedsUnsubscribe = "unsubscribe" // their subscriptions end
)

// ErrDigestHasFeeds is returned by DeleteDigest when the digest still
// delivers feeds and the caller did not say what becomes of them.
var ErrDigestHasFeeds = errors.New("the digest still delivers feeds")

// DeleteDigest deletes userID's digest id, in one transaction. Its feeds
// (subscriptions not ended) go to instant delivery or end, as feeds says
// (DigestFeeds*; "" is allowed only when there are none: ErrDigestHasFeeds
// otherwise). Posts waiting for its next issue go with it, and an issue
// queued or held but not yet being sent is cancelled (nothing was charged
// for it). It returns how many feeds it delivered.
func (s *Store) DeleteDigest(ctx context.Context, userID, id int64, feeds string) (int, error) {
	var n int
	err := s.Tx(ctx, func(tx *Store) error {
		if _, err := tx.AccountDigest(ctx, userID, id); err != nil {
			return err
		}
		var subs []Subscription
		if err := tx.DB.Where("digest_id = ? AND state <> ?", id, SubEnded).Find(&subs).Error; err != nil {
			return err
		}
		n = len(subs)
		now := tx.now()
		switch {
		case n == 0:
		case feeds == DigestFeedsInstant:
			if err := tx.DB.Model(&Subscription{}).Where("digest_id = ? AND state <> ?", id, SubEnded).
				Update("digest_id", nil).Error; err != nil {
				return err
			}
		case feeds == DigestFeedsUnsubscribe:
			if err := tx.DB.Model(&Subscription{}).Where("digest_id = ? AND state <> ?", id, SubEnded).
				Updates(map[string]any{"state": SubEnded, "ended_at": now, "ended_reason": "digest deleted"}).Error; err != nil {
				return err
			}
			for _, sub := range subs {
				if err := tx.recountSubscribers(sub.FeedID); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: %d", ErrDigestHasFeeds, n)
		}
		if err := tx.DB.Exec(`UPDATE outbox SET state = ?, last_error = 'digest deleted', lease_owner = '', lease_until = NULL
WHERE kind = ? AND user_id = ? AND state IN (?, ?) AND lease_owner = '' AND issue_id IN (SELECT id FROM digest_issues WHERE digest_id = ?)`,
			OutboxFailed, KindDigest, userID, OutboxQueued, OutboxHeld, id).Error; err != nil {
			return err
		}
		return tx.DB.Where("id = ? AND user_id = ?", id, userID).Delete(&Digest{}).Error
	})
	if err != nil {
		return 0, fmt.Errorf("delete digest %d: %w", id, err)
	}
	return n, nil
}
