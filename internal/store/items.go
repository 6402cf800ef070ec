package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/model"
)

// Item is one entry of a feed, recorded once per (feed, identity).
type Item struct {
	ID          int64 `gorm:"primaryKey"`
	FeedID      int64
	Identity    string
	GUID        string `gorm:"column:guid"`
	Link        string
	Title       string
	Content     string
	Author      string
	PublishedAt *time.Time
	SeenAt      time.Time
	IgnoredRule string          // non-empty: recorded as seen, never delivered
	Media       model.ItemMedia `gorm:"type:text;not null;default:''"`
	// ContentHash is the fingerprint of this version (Fingerprint); ""
	// for items stored before fingerprints were.
	ContentHash string
	// Burst: the post came in a burst (billing.FeedRate), so instant
	// email of it is free to a reader who pays for themselves.
	Burst bool
}

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

// ItemDates returns the publish dates of up to limit of a feed's items,
// newest first as ItemsOfFeed orders them; the zero time for an undated
// item. It reads one column, for the cost forecast of every subscription
// on a page.
func (s *Store) ItemDates(ctx context.Context, feedID int64, limit int) ([]time.Time, error) {
	// sql.NullTime: an undated item's NULL scans on every driver.
	var dates []sql.NullTime
	q := s.DB.WithContext(ctx).Model(&Item{}).Where("feed_id = ?", feedID).Order("seen_at DESC, id DESC")
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Pluck("published_at", &dates).Error; err != nil {
		return nil, fmt.Errorf("item dates of feed %d: %w", feedID, err)
	}
	out := make([]time.Time, len(dates))
	for i, d := range dates {
		if d.Valid {
			out[i] = d.Time.UTC()
		}
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
	// Owner is the user id of the feed's verified publisher when the feed
	// is owner-paid (feed_owners), 0 otherwise.
	Owner int64
}

// ItemDeliveries loads the item, feed, subscription and feed owner of each
// "item" row, in four queries whatever the number of rows, keyed by outbox
// id. A row whose item or subscription is gone (or was never set) has no
// entry.
func (s *Store) ItemDeliveries(ctx context.Context, rows []*OutboxRow) (map[int64]ItemDelivery, error) {
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
	db, d := s.DB.WithContext(ctx), s.sqlDialect()
	var items []Item
	if err := db.Where(d.idsIn("id", outboxUniq(itemIDs))).Find(&items).Error; err != nil {
		return nil, fmt.Errorf("load items: %w", err)
	}
	var subs []Subscription
	if err := db.Where(d.idsIn("id", outboxUniq(subIDs))).Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("load subscriptions: %w", err)
	}
	itemBy := make(map[int64]*Item, len(items))
	var feedIDs []int64
	for i := range items {
		itemBy[items[i].ID] = &items[i]
		feedIDs = append(feedIDs, items[i].FeedID)
	}
	var feeds []Feed
	if err := db.Where(d.idsIn("id", outboxUniq(feedIDs))).Find(&feeds).Error; err != nil {
		return nil, fmt.Errorf("load feeds: %w", err)
	}
	feedBy := make(map[int64]*Feed, len(feeds))
	for i := range feeds {
		feedBy[feeds[i].ID] = &feeds[i]
	}
	var owners []FeedOwner
	if err := db.Where(d.idsIn("feed_id", outboxUniq(feedIDs))).Find(&owners).Error; err != nil {
		return nil, fmt.Errorf("load feed owners: %w", err)
	}
	ownerBy := make(map[int64]int64, len(owners))
	for _, o := range owners {
		ownerBy[o.FeedID] = o.UserID
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
		out[r.ID] = ItemDelivery{Item: it, Feed: feedBy[it.FeedID], Subscription: sub, Owner: ownerBy[it.FeedID]}
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
	Media       model.ItemMedia
	// ContentHash is its Fingerprint; the insert computes it when empty.
	ContentHash string
}

// hash is the item's fingerprint: ContentHash, else computed.
func (n *NewItem) hash() string {
	if n.ContentHash != "" {
		return n.ContentHash
	}
	return Fingerprint(n.Title, n.Content, n.Media)
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
		q := s.psNew().sql("SELECT identity FROM items WHERE feed_id = ").arg(feedID, "bigint").sql(" AND identity")
		inList(q, part, "text")
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

// pendingItem is a new item of the record recs[rec], waiting to be inserted.
type pendingItem struct {
	rec int
	it  *NewItem
}

// itemCols and itemTail frame the multi-row INSERT of new items: an item
// already recorded (by identity) is neither inserted nor returned.
const (
	itemCols = `INSERT INTO items (feed_id, identity, guid, link, title, content, author, published_at, seen_at, ignored_rule, media, content_hash) `
	itemTail = ` ON CONFLICT (feed_id, identity) DO NOTHING RETURNING id, feed_id, identity, ignored_rule`
)

// insertItems is step 2 of a poll's write: it inserts the new items of
// the records that are written (idx), adds the inserted ones to their
// outcomes, and returns the ids of the inserted items that are not
// ignored, which the fan-out delivers.
func (s *Store) insertItems(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome, idx map[int64]int, now time.Time) ([]int64, error) {
	var pending []pendingItem
	for i, r := range recs {
		if outs[i].Lost {
			continue
		}
		for k := range r.Items {
			pending = append(pending, pendingItem{i, &recs[i].Items[k]})
		}
	}
	var deliver []int64
	insert := func(q *psQuery) error {
		ids, err := scanInsertedItems(ctx, c, q, idx, outs)
		deliver = append(deliver, ids...)
		return err
	}
	if s.sqlDialect().arrayParams() && len(pending) > 0 {
		if err := insert(s.insertItemsUnnest(recs, pending, now)); err != nil {
			return nil, err
		}
		pending = nil
	}
	for start := 0; start < len(pending); start += psChunk {
		part := pending[start:min(start+psChunk, len(pending))]
		if err := insert(s.insertItemsValues(recs, part, now)); err != nil {
			return nil, err
		}
	}
	return deliver, nil
}

// insertItemsUnnest builds the Postgres INSERT of pending: one array
// parameter per column.
func (s *Store) insertItemsUnnest(recs []PollRecord, pending []pendingItem, now time.Time) *psQuery {
	n := len(pending)
	feedIDs, idents, guids, lnks, titles, contents, authors, rules, media, hashes :=
		make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	pubs, seens := make([]*time.Time, n), make([]time.Time, n)
	for j, p := range pending {
		r := &recs[p.rec]
		feedIDs[j], idents[j], guids[j], lnks[j], titles[j] = r.FeedID, p.it.Identity, p.it.GUID, p.it.Link, p.it.Title
		contents[j], authors[j], rules[j], media[j] = p.it.Content, p.it.Author, p.it.IgnoredRule, p.it.Media.Encode()
		pubs[j], seens[j], hashes[j] = utcPtrOrNil(p.it.PublishedAt), r.logAt(now), p.it.hash()
	}
	return s.psNew().sql(itemCols+`SELECT * FROM unnest(`).arg(feedIDs, "bigint[]").sql(", ").arg(idents, "text[]").sql(", ").
		arg(guids, "text[]").sql(", ").arg(lnks, "text[]").sql(", ").arg(titles, "text[]").sql(", ").
		arg(contents, "text[]").sql(", ").arg(authors, "text[]").sql(", ").arg(pubs, "timestamptz[]").sql(", ").
		arg(seens, "timestamptz[]").sql(", ").arg(rules, "text[]").sql(", ").arg(media, "text[]").sql(", ").
		arg(hashes, "text[]").sql(")" + itemTail)
}

// insertItemsValues builds the INSERT of part as a VALUES list (SQLite).
func (s *Store) insertItemsValues(recs []PollRecord, part []pendingItem, now time.Time) *psQuery {
	q := s.psNew().sql(itemCols + `VALUES `)
	for j, p := range part {
		if j > 0 {
			q.sql(", ")
		}
		r := &recs[p.rec]
		q.sql("(").arg(r.FeedID, "").sql(", ").arg(p.it.Identity, "").sql(", ").arg(p.it.GUID, "").sql(", ").
			arg(p.it.Link, "").sql(", ").arg(p.it.Title, "").sql(", ").arg(p.it.Content, "").sql(", ").
			arg(p.it.Author, "").sql(", ").arg(utcPtrOrNil(p.it.PublishedAt), "").sql(", ").
			arg(r.logAt(now), "").sql(", ").arg(p.it.IgnoredRule, "").sql(", ").arg(p.it.Media.Encode(), "").sql(", ").
			arg(p.it.hash(), "").sql(")")
	}
	return q.sql(itemTail)
}

// scanInsertedItems runs an item INSERT … RETURNING, adds each inserted
// item to its record's outcome and returns the ids of those not ignored.
func scanInsertedItems(ctx context.Context, c gorm.ConnPool, q *psQuery, idx map[int64]int, outs []PollOutcome) ([]int64, error) {
	rows, err := q.query(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("insert items: %w", err)
	}
	defer rows.Close()
	var deliver []int64
	for rows.Next() {
		var ri RecordedItem
		var feedID int64
		if err := rows.Scan(&ri.ID, &feedID, &ri.Identity, &ri.IgnoredRule); err != nil {
			return deliver, err
		}
		i := idx[feedID]
		outs[i].Items = append(outs[i].Items, ri)
		if ri.IgnoredRule == "" {
			deliver = append(deliver, ri.ID)
		}
	}
	return deliver, rows.Err()
}
