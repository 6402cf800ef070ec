package store

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/billing"
)

// The lapse of an owner-paid feed (its owner's credits ran out, see
// outbox_owner.go): NotifyOwnerLapses tells its readers once per lapse,
// SweepOwnerLapses unsubscribes, after the notice period, the readers who
// did not choose to pay. Each step claims its work with a conditional
// UPDATE of the feed_owners row inside the transaction that does it, so of
// several processes exactly one does it; the notices' dedupe keys make a
// replay harmless as well.

// LapseNotices builds the free notices of a lapse. Any may be nil (no
// notice of that kind).
type LapseNotices struct {
	// Reader tells subscription sub's person that f's owner stopped paying
	// (lapse seq): they may pay themselves before deadline.
	Reader func(f Feed, sub Subscription, seq int, deadline time.Time) (dedupeKey string, n Notice)
	// Owner tells f's owner that their credits ran out and their readers
	// were told.
	Owner func(f Feed, owner int64, seq int, deadline time.Time) (dedupeKey string, n Notice)
	// Ended tells sub's person that their subscription to f ended because
	// nobody pays for it.
	Ended func(f Feed, sub Subscription) (dedupeKey string, n Notice)
}

// EndedOwnerStopped is the ended_reason of a subscription ended by
// SweepOwnerLapses.
const EndedOwnerStopped = "owner-paid feed: its publisher stopped paying"

// NotifyOwnerLapses queues the notices of every lapse not told yet: one
// to each active reader of the feed who has not chosen to pay, and one to
// the owner. It returns how many notices it queued.
func (s *Store) NotifyOwnerLapses(ctx context.Context, period time.Duration, n LapseNotices) (int, error) {
	var feeds []int64
	if err := s.DB.WithContext(ctx).Model(&FeedOwner{}).
		Where("lapsed_at IS NOT NULL AND swept_at IS NULL AND notified_seq < lapse_seq").
		Order("feed_id").Pluck("feed_id", &feeds).Error; err != nil {
		return 0, fmt.Errorf("lapses to tell: %w", err)
	}
	total := 0
	for _, f := range feeds {
		err := s.Tx(ctx, func(tx *Store) error {
			k, err := tx.notifyLapse(ctx, f, period, n)
			total += k
			return err
		})
		if err != nil {
			return total, fmt.Errorf("tell lapse of feed %d: %w", f, err)
		}
	}
	return total, nil
}

// notifyLapse claims feed's untold lapse and queues its notices, inside
// Tx; it returns how many it queued (0 when another process claimed it).
func (s *Store) notifyLapse(ctx context.Context, feed int64, period time.Duration, n LapseNotices) (int, error) {
	db := s.DB.WithContext(ctx)
	res := db.Exec(`UPDATE feed_owners SET notified_seq = lapse_seq
WHERE feed_id = ? AND lapsed_at IS NOT NULL AND swept_at IS NULL AND notified_seq < lapse_seq`, feed)
	if res.Error != nil || res.RowsAffected == 0 {
		return 0, res.Error
	}
	o, f, err := s.ownerAndFeed(ctx, feed)
	if err != nil {
		return 0, err
	}
	deadline := o.LapsedAt.Add(period)
	subs, err := s.readersToTell(ctx, o)
	if err != nil {
		return 0, err
	}
	queued := 0
	for _, sub := range subs {
		if n.Reader == nil {
			break
		}
		key, notice := n.Reader(*f, sub, o.LapseSeq, deadline)
		if ok, err := s.QueueNotice(ctx, sub.UserID, key, notice); err != nil {
			return queued, err
		} else if ok {
			queued++
		}
	}
	if n.Owner != nil {
		key, notice := n.Owner(*f, o.UserID, o.LapseSeq, deadline)
		if ok, err := s.QueueNotice(ctx, o.UserID, key, notice); err != nil {
			return queued, err
		} else if ok {
			queued++
		}
	}
	return queued, nil
}

// ownerAndFeed reads feed's owner row and the feed.
func (s *Store) ownerAndFeed(ctx context.Context, feed int64) (*FeedOwner, *Feed, error) {
	var o FeedOwner
	if err := s.DB.WithContext(ctx).Take(&o, "feed_id = ?", feed).Error; err != nil {
		return nil, nil, fmt.Errorf("owner of feed %d: %w", feed, notFound(err))
	}
	f, err := s.FeedByID(ctx, feed)
	return &o, f, err
}

// readersToTell are the active subscriptions of o's feed, other than the
// owner's own, that have not chosen to pay.
func (s *Store) readersToTell(ctx context.Context, o *FeedOwner) ([]Subscription, error) {
	var subs []Subscription
	err := s.DB.WithContext(ctx).Where(`feed_id = ? AND state = ? AND user_id <> ?
AND NOT EXISTS (SELECT 1 FROM owner_paid_choices c WHERE c.subscription_id = subscriptions.id)`,
		o.FeedID, SubActive, o.UserID).Order("id").Find(&subs).Error
	if err != nil {
		return nil, fmt.Errorf("readers of feed %d: %w", o.FeedID, err)
	}
	return subs, nil
}

// SweepOwnerLapses first ends the lapses of owners who have credits again
// (bought since, with no charge since to notice): the owner pays on for
// everyone. Then it ends every lapse whose notice period is over: the
// readers confirmed before the lapse began who did not choose to pay are
// unsubscribed (and told), and those who chose keep receiving and pay. It
// returns how many subscriptions it ended.
func (s *Store) SweepOwnerLapses(ctx context.Context, period time.Duration, n LapseNotices) (int, error) {
	if err := s.endPaidLapses(ctx); err != nil {
		return 0, err
	}
	var feeds []int64
	if err := s.DB.WithContext(ctx).Model(&FeedOwner{}).
		Where("lapsed_at IS NOT NULL AND swept_at IS NULL AND lapsed_at <= ?", s.now().Add(-period)).
		Order("feed_id").Pluck("feed_id", &feeds).Error; err != nil {
		return 0, fmt.Errorf("lapses past their notice period: %w", err)
	}
	total := 0
	for _, f := range feeds {
		err := s.Tx(ctx, func(tx *Store) error {
			k, err := tx.sweepLapse(ctx, f, period, n)
			total += k
			return err
		})
		if err != nil {
			return total, fmt.Errorf("end lapse of feed %d: %w", f, err)
		}
	}
	return total, nil
}

// sweepLapse claims feed's lapse past its period and ends it, inside Tx;
// it returns how many subscriptions it ended.
func (s *Store) sweepLapse(ctx context.Context, feed int64, period time.Duration, n LapseNotices) (int, error) {
	db := s.DB.WithContext(ctx)
	now := s.now()
	res := db.Model(&FeedOwner{}).Where("feed_id = ? AND lapsed_at IS NOT NULL AND swept_at IS NULL AND lapsed_at <= ?", feed, now.Add(-period)).
		UpdateColumn("swept_at", now)
	if res.Error != nil || res.RowsAffected == 0 {
		return 0, res.Error
	}
	o, f, err := s.ownerAndFeed(ctx, feed)
	if err != nil {
		return 0, err
	}
	balance, err := s.ledgerLockUser(ctx, o.UserID)
	if err != nil {
		return 0, err
	}
	if balance >= billing.OwnerCreditsPerPost {
		return 0, s.markLapses(ctx, map[int64]bool{feed: true}, nil)
	}
	subs, err := s.readersToTell(ctx, o)
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, sub := range subs {
		if sub.ConfirmedAt == nil || sub.ConfirmedAt.After(*o.LapsedAt) {
			continue // not active when told: a charge to the owner for them starts the next lapse
		}
		if err := db.Model(&Subscription{}).Where("id = ? AND state = ?", sub.ID, SubActive).
			Updates(map[string]any{"state": SubEnded, "ended_at": now, "ended_reason": EndedOwnerStopped}).Error; err != nil {
			return ended, fmt.Errorf("end subscription %d: %w", sub.ID, err)
		}
		ended++
		if n.Ended != nil {
			key, notice := n.Ended(*f, sub)
			if _, err := s.QueueNotice(ctx, sub.UserID, key, notice); err != nil {
				return ended, err
			}
		}
	}
	return ended, s.recountSubscribers(feed)
}

// endPaidLapses ends the lapses (in their notice period or after it) of
// owners who have credits again: readers who chose to pay stop paying.
func (s *Store) endPaidLapses(ctx context.Context) error {
	var feeds []int64
	if err := s.DB.WithContext(ctx).Raw(`SELECT fo.feed_id FROM feed_owners fo JOIN users u ON u.id = fo.user_id
WHERE fo.lapsed_at IS NOT NULL AND u.balance >= ? ORDER BY fo.feed_id`, billing.OwnerCreditsPerPost).Scan(&feeds).Error; err != nil {
		return fmt.Errorf("lapses of owners with credits: %w", err)
	}
	if len(feeds) == 0 {
		return nil
	}
	paid := make(map[int64]bool, len(feeds))
	for _, f := range feeds {
		paid[f] = true
	}
	return s.Tx(ctx, func(tx *Store) error { return tx.markLapses(ctx, paid, nil) })
}
