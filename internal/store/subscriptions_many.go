package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedmail/feedmail/internal/model"
)

// NewSubscription is one subscription SubscribeMany adds: to a feed, in an
// import's folder ("" at the top).
type NewSubscription struct {
	FeedID int64
	Folder string
}

// subscribeManyChunk is how many subscriptions one INSERT writes (about ten
// columns, well under SQLite's parameter limit).
const subscribeManyChunk = 500

// SubscribeMany is SubscribeConfirmedBy (email deliveries) for many feeds
// of one person, in one transaction of a few statements: the rows missing
// are created with
// multi-row inserts, existing ones (ended, or made meanwhile) are taken up
// one by one as SubscribeConfirmedBy does, each gets its folder, and the
// feeds' subscriber counts are recomputed in one statement. It returns the
// subscriptions by feed id. A feed must appear once in subs.
func (s *Store) SubscribeMany(ctx context.Context, userID int64, subs []NewSubscription, digestID *int64, confirmedBy string) (map[int64]*Subscription, error) {
	out := make(map[int64]*Subscription, len(subs))
	if len(subs) == 0 {
		return out, nil
	}
	ids := make([]int64, len(subs))
	for i, n := range subs {
		ids[i] = n.FeedID
	}
	err := s.Tx(ctx, func(tx *Store) error {
		existing, err := tx.subscriptionsOfFeeds(ctx, userID, ids)
		if err != nil {
			return err
		}
		var fresh []Subscription
		for _, n := range subs {
			sub, ok := existing[n.FeedID]
			if !ok {
				row := tx.newSubscription(userID, n.FeedID, digestID, confirmedBy)
				row.Folder = n.Folder
				fresh = append(fresh, row)
				continue
			}
			if err := tx.resubscribe(ctx, sub, digestID, confirmedBy); err != nil {
				return err
			}
			if err := tx.DB.Model(sub).Update("folder", n.Folder).Error; err != nil {
				return fmt.Errorf("set folder of subscription %d: %w", sub.ID, err)
			}
			sub.Folder, out[n.FeedID] = n.Folder, sub
		}
		if len(fresh) > 0 {
			if err := tx.DB.CreateInBatches(&fresh, subscribeManyChunk).Error; err != nil {
				return fmt.Errorf("create subscriptions: %w", err)
			}
		}
		for i := range fresh {
			out[fresh[i].FeedID] = &fresh[i]
		}
		return tx.recountSubscribersOf(ids)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe user %d to %d feeds: %w", userID, len(subs), err)
	}
	return out, nil
}

// subscriptionsOfFeeds returns userID's email subscriptions (in any state)
// to these feeds, by feed id.
func (s *Store) subscriptionsOfFeeds(ctx context.Context, userID int64, feedIDs []int64) (map[int64]*Subscription, error) {
	out := map[int64]*Subscription{}
	for start := 0; start < len(feedIDs); start += psChunk {
		var rows []Subscription
		part := feedIDs[start:min(start+psChunk, len(feedIDs))]
		if err := s.DB.WithContext(ctx).Where("user_id = ? AND channel = ? AND target = '' AND feed_id IN ?", userID, model.ChannelEmail, part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("subscriptions of user %d: %w", userID, err)
		}
		for i := range rows {
			out[rows[i].FeedID] = &rows[i]
		}
	}
	return out, nil
}

// recountSubscribersOf is recountSubscribers for many feeds, one statement
// per few hundred.
// The rows are locked in id order first (on Postgres), as the poller's
// writes lock them, so a poll written meanwhile cannot deadlock with it.
func (s *Store) recountSubscribersOf(feedIDs []int64) error {
	ids := slices.Clone(feedIDs)
	slices.Sort(ids)
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		if err := s.DB.Exec(`UPDATE feeds SET subscriber_count =
  (SELECT COUNT(DISTINCT user_id) FROM subscriptions WHERE subscriptions.feed_id = feeds.id AND subscriptions.state = 'active')
WHERE id IN (SELECT id FROM feeds WHERE id IN ?`+s.sqlDialect().lockOrderedBy("id")+`)`, part).Error; err != nil {
			return fmt.Errorf("recount subscribers: %w", err)
		}
	}
	return nil
}
