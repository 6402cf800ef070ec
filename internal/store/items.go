package store

import (
	"context"
	"fmt"
	"time"
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

// ItemDate is the date a digest sorts and shows an item by: its published
// date, else when feedmail first saw it.
func ItemDate(it Item) time.Time {
	if it.PublishedAt != nil && !it.PublishedAt.IsZero() {
		return *it.PublishedAt
	}
	return it.SeenAt
}

// ItemDelivery is what an instant email is made of.
type ItemDelivery struct {
	Item         *Item
	Feed         *Feed
	Subscription *Subscription
}

// ItemDeliveries loads the item, feed and subscription of each "item" row,
// in three queries whatever the number of rows, keyed by outbox id. A row
// whose item or subscription is gone (or was never set) has no entry.
func (s *Store) ItemDeliveries(ctx context.Context, rows []*OutboxEmail) (map[int64]ItemDelivery, error) {
	out := make(map[int64]ItemDelivery, len(rows))
	var itemIDs, subIDs []int64
	for _, r := range rows {
		if r.ItemID != nil && r.SubscriptionID != nil {
			itemIDs, subIDs = append(itemIDs, *r.ItemID), append(subIDs, *r.SubscriptionID)
		}
	}
	if len(itemIDs) == 0 {
		return out, nil
	}
	db := s.DB.WithContext(ctx)
	var items []Item
	if err := db.Where("id IN ?", outboxUniq(itemIDs)).Find(&items).Error; err != nil {
		return nil, fmt.Errorf("load items: %w", err)
	}
	var subs []Subscription
	if err := db.Where("id IN ?", outboxUniq(subIDs)).Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("load subscriptions: %w", err)
	}
	itemBy := make(map[int64]*Item, len(items))
	var feedIDs []int64
	for i := range items {
		itemBy[items[i].ID] = &items[i]
		feedIDs = append(feedIDs, items[i].FeedID)
	}
	var feeds []Feed
	if err := db.Where("id IN ?", outboxUniq(feedIDs)).Find(&feeds).Error; err != nil {
		return nil, fmt.Errorf("load feeds: %w", err)
	}
	feedBy := make(map[int64]*Feed, len(feeds))
	for i := range feeds {
		feedBy[feeds[i].ID] = &feeds[i]
	}
	subBy := make(map[int64]*Subscription, len(subs))
	for i := range subs {
		subBy[subs[i].ID] = &subs[i]
	}
	for _, r := range rows {
		if r.ItemID == nil || r.SubscriptionID == nil {
			continue
		}
		it, sub := itemBy[*r.ItemID], subBy[*r.SubscriptionID]
		if it == nil || sub == nil || feedBy[it.FeedID] == nil {
			continue
		}
		out[r.ID] = ItemDelivery{Item: it, Feed: feedBy[it.FeedID], Subscription: sub}
	}
	return out, nil
}

// IgnoredFirstPoll is the ignored_rule of the items recorded by a feed's
// first successful parse: all seen, none mailed.
const IgnoredFirstPoll = "first poll"

// NewItem is an item a poll found that the store did not know (by identity)
// when the poll looked. IgnoredRule non-empty: recorded as seen, never
// delivered.
type NewItem struct {
	Identity    string
	GUID        string
	Link        string
	Title       string
	Content     string
	Author      string
	PublishedAt *time.Time
	IgnoredRule string
}

// RecordedItem is an item a poll inserted.
type RecordedItem struct {
	ID          int64
	Identity    string
	IgnoredRule string
}

// KnownIdentities returns which of identities feedID has already recorded,
// in one query.
func (s *Store) KnownIdentities(ctx context.Context, feedID int64, identities []string) (map[string]bool, error) {
	known := make(map[string]bool)
	c := s.psConn(ctx)
	for start, chunk := 0, s.psChunkOf(len(identities)); start < len(identities); start += chunk {
		part := identities[start:min(start+chunk, len(identities))]
		q := s.psNew().sql("SELECT identity FROM items WHERE feed_id = ").arg(feedID, "bigint")
		if s.Postgres() {
			q.sql(" AND identity = ANY(").arg(part, "text[]").sql(")")
		} else {
			q.sql(" AND identity IN (")
			for j, id := range part {
				if j > 0 {
					q.sql(", ")
				}
				q.arg(id, "")
			}
			q.sql(")")
		}
		rows, err := q.query(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("known items of feed %d: %w", feedID, err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return known, nil
}
