package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrMoveSettled is returned for a reader's side of a move that was acted
// on already (an offer accepted or declined, a move undone): the second
// click of a button changes nothing.
var ErrMoveSettled = errors.New("already settled")

// AcceptOffer moves the subscription of one reader's offer (reader move
// id, state 'offered') to the offered feed, and returns the side, now
// 'accepted', with its move. A reader who already follows that feed the
// same way keeps that subscription, and the offered one ends.
func (s *Store) AcceptOffer(ctx context.Context, id int64) (ReaderMove, FeedMove, error) {
	return s.settleReaderMove(ctx, id, ReaderOffered, ReaderAccepted, func(tx *Store, rm ReaderMove, m FeedMove, now time.Time) error {
		return tx.moveSubscription(ctx, rm.SubscriptionID, m.FromFeedID, m.ToFeedID, now)
	})
}

// DeclineOffer records that the reader keeps their subscription as it is.
func (s *Store) DeclineOffer(ctx context.Context, id int64) (ReaderMove, FeedMove, error) {
	return s.settleReaderMove(ctx, id, ReaderOffered, ReaderDeclined, nil)
}

// UndoMove moves the subscription of one reader's side of a move (state
// 'moved') back to the feed it was moved from, which is polled again if
// the move had stopped it.
func (s *Store) UndoMove(ctx context.Context, id int64) (ReaderMove, FeedMove, error) {
	return s.settleReaderMove(ctx, id, ReaderMoved, ReaderUndone, func(tx *Store, rm ReaderMove, m FeedMove, now time.Time) error {
		if err := tx.DB.Model(&Feed{}).Where("id = ? AND state = ?", m.FromFeedID, FeedMerged).Updates(map[string]any{
			"state": FeedActive, "next_poll_at": now, "poll_reason": "a reader moved back from " + feedURLOf(tx, m.ToFeedID) + ": poll now",
		}).Error; err != nil {
			return fmt.Errorf("poll feed %d again: %w", m.FromFeedID, err)
		}
		return tx.moveSubscription(ctx, rm.SubscriptionID, m.ToFeedID, m.FromFeedID, now)
	})
}

// settleReaderMove turns reader move id from state from into state to,
// running act in the same transaction. A side not in state from gives
// ErrMoveSettled (with the side and move, so a page can say what happened).
func (s *Store) settleReaderMove(ctx context.Context, id int64, from, to string,
	act func(tx *Store, rm ReaderMove, m FeedMove, now time.Time) error) (ReaderMove, FeedMove, error) {
	var rm ReaderMove
	var m FeedMove
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if rm, m, err = tx.ReaderMoveByID(ctx, id); err != nil {
			return err
		}
		if rm.State != from {
			return ErrMoveSettled
		}
		now := tx.now()
		res := tx.DB.Model(&ReaderMove{}).Where("id = ? AND state = ?", id, from).
			Updates(map[string]any{"state": to, "acted_at": now})
		if res.Error != nil {
			return fmt.Errorf("settle reader move %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrMoveSettled
		}
		rm.State, rm.ActedAt = to, &now
		if act == nil {
			return nil
		}
		return act(tx, rm, m, now)
	})
	return rm, m, err
}

// moveSubscription moves subscription subID from feed from to feed into.
// When its person already has a subscription to into by the same channel
// and target, that one stays (made active again if it had ended) and subID
// ends. Both feeds' subscriber counts are recounted, and into is made due
// now when it was waiting, so the first post at the new address is not
// late.
func (s *Store) moveSubscription(ctx context.Context, subID, from, into int64, now time.Time) error {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Take(&sub, subID).Error; err != nil {
		return fmt.Errorf("subscription %d: %w", subID, notFound(err))
	}
	if sub.FeedID != from {
		return nil // moved already (a 301 merge, another click)
	}
	var twin Subscription
	err := s.DB.WithContext(ctx).Where("user_id = ? AND feed_id = ? AND channel = ? AND COALESCE(target, '') = ?",
		sub.UserID, into, sub.Channel, sub.Target).Take(&twin).Error
	switch {
	case err == nil:
		if twin.State == SubEnded && sub.State != SubEnded {
			if err := s.DB.Model(&Subscription{}).Where("id = ?", twin.ID).
				Updates(map[string]any{"state": sub.State, "ended_at": nil, "ended_reason": ""}).Error; err != nil {
				return fmt.Errorf("take up subscription %d again: %w", twin.ID, err)
			}
		}
		if err := s.DB.Model(&Subscription{}).Where("id = ?", sub.ID).Updates(map[string]any{
			"state": SubEnded, "ended_at": now, "ended_reason": "followed at " + feedURLOf(s, into) + " already",
		}).Error; err != nil {
			return fmt.Errorf("end subscription %d: %w", sub.ID, err)
		}
	case errors.Is(notFound(err), ErrNotFound):
		if err := s.DB.Model(&Subscription{}).Where("id = ?", sub.ID).Update("feed_id", into).Error; err != nil {
			return fmt.Errorf("move subscription %d: %w", sub.ID, err)
		}
	default:
		return fmt.Errorf("subscriptions of user %d: %w", sub.UserID, err)
	}
	if err := s.recountSubscribers(from); err != nil {
		return err
	}
	if err := s.recountSubscribers(into); err != nil {
		return err
	}
	return s.DB.Model(&Feed{}).Where("id = ? AND state = ? AND next_poll_at > ? AND (lease_until IS NULL OR lease_until <= ?)",
		into, FeedActive, now, now).Updates(map[string]any{"next_poll_at": now, "poll_reason": "a reader moved here: poll now"}).Error
}
