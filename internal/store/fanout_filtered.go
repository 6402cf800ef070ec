package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/filter"
)

// Routing to subscriptions with filters. The batch statements of
// fanout.go route to unfiltered subscriptions only (routeUnfiltered);
// the few subscriptions with include or exclude terms get a pass in Go:
// their terms are compiled, each new item is matched once per
// subscription (its title and content are in the poll record), and the
// passing items go in with the same statements restricted to that
// subscription and those items, so dedupe keys and conflicts are the
// same. A filtered-out item gets no outbox row and no digest_items row:
// it is neither mailed nor charged and adds nothing to a digest's price.

// routeUnfiltered restricts a batch routing statement to subscriptions
// without filters.
const routeUnfiltered = "\n AND s.include_terms = '' AND s.exclude_terms = ''"

// filteredSub is an active subscription with filters.
type filteredSub struct {
	ID, FeedID   int64
	Digest       bool
	IncludeTerms string
	ExcludeTerms string
}

// filteredSubsOf returns the active subscriptions with filters of feeds.
func (s *Store) filteredSubsOf(ctx context.Context, c gorm.ConnPool, feeds []int64) ([]filteredSub, error) {
	q := s.psNew().sql(`SELECT id, feed_id, digest_id IS NOT NULL, include_terms, exclude_terms FROM subscriptions
WHERE state = 'active' AND (include_terms <> '' OR exclude_terms <> '') AND feed_id`).in(feeds).sql(" ORDER BY id")
	rows, err := q.query(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("filtered subscriptions: %w", err)
	}
	defer rows.Close()
	var out []filteredSub
	for rows.Next() {
		var f filteredSub
		if err := rows.Scan(&f.ID, &f.FeedID, &f.Digest, &f.IncludeTerms, &f.ExcludeTerms); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// routeFilteredBatch is the Go pass of routeNewItems: the deliverable
// items of a poll batch (deliver) for the filtered subscriptions of
// their feeds. It counts routed rows (Emails, DigestItems) and
// filtered-out ones (Filtered) in each record's outcome.
func (s *Store) routeFilteredBatch(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome,
	idx map[int64]int, deliver []int64, now time.Time) error {
	if len(deliver) == 0 {
		return nil
	}
	feeds := make([]int64, 0, len(idx))
	for feedID := range idx {
		feeds = append(feeds, feedID)
	}
	subs, err := s.filteredSubsOf(ctx, c, feeds)
	if err != nil || len(subs) == 0 {
		return err
	}
	wanted := make(map[int64]bool, len(deliver))
	for _, id := range deliver {
		wanted[id] = true
	}
	docs := map[int64][]docOf{} // by feed, prepared on first use
	for _, sub := range subs {
		i, ok := idx[sub.FeedID]
		if !ok {
			continue
		}
		if _, done := docs[sub.FeedID]; !done {
			docs[sub.FeedID] = recordDocs(recs[i], outs[i], wanted)
		}
		pass := passing(sub.IncludeTerms, sub.ExcludeTerms, docs[sub.FeedID])
		outs[i].Filtered += int64(len(docs[sub.FeedID]) - len(pass))
		n, err := s.routeToSub(ctx, c, sub, pass, now)
		if err != nil {
			return err
		}
		if sub.Digest {
			outs[i].DigestItems += n
		} else {
			outs[i].Emails += n
		}
	}
	return nil
}

// docOf is an item made ready for matching.
type docOf struct {
	id  int64
	doc filter.Doc
}

// recordDocs prepares the items of one record that are to be delivered,
// from the titles and contents the record carries.
func recordDocs(r PollRecord, o PollOutcome, wanted map[int64]bool) []docOf {
	byIdentity := make(map[string]*NewItem, len(r.Items))
	for k := range r.Items {
		byIdentity[r.Items[k].Identity] = &r.Items[k]
	}
	var out []docOf
	for _, it := range o.Items {
		if ni := byIdentity[it.Identity]; ni != nil && wanted[it.ID] {
			out = append(out, docOf{id: it.ID, doc: filter.NewDoc(ni.Title, ni.Content)})
		}
	}
	return out
}

// passing returns the ids of the items that pass the terms; none when
// the stored terms no longer parse (see filterOf).
func passing(include, exclude string, docs []docOf) []int64 {
	f, ok := filterOf(include, exclude)
	if !ok {
		return nil
	}
	var out []int64
	for _, d := range docs {
		if f.Pass(d.doc) {
			out = append(out, d.id)
		}
	}
	return out
}

// routeToSub routes items to one subscription by its delivery, with the
// statements of fanout.go, and returns how many rows it wrote.
func (s *Store) routeToSub(ctx context.Context, c gorm.ConnPool, sub filteredSub, items []int64, now time.Time) (int64, error) {
	var total int64
	for start, chunk := 0, s.psChunkOf(len(items)); start < len(items); start += chunk {
		part := items[start:min(start+chunk, len(items))]
		var q *psQuery
		if sub.Digest {
			q = s.psNew().sql(routeDigestHead).arg(now, "timestamptz").sql(routeDigestFrom)
		} else {
			q = s.routeInstantStart(now).sql(routeInstantFrom)
		}
		q.sql("WHERE s.id = ").arg(sub.ID, "bigint").sql(" AND i.id").in(part)
		if sub.Digest {
			q.sql("\nON CONFLICT (subscription_id, item_id) DO NOTHING")
		} else {
			q = notPaused(q, now).sql("\nON CONFLICT (dedupe_key) DO NOTHING")
		}
		n, err := q.exec(ctx, c)
		if err != nil {
			return total, fmt.Errorf("route to filtered subscription %d: %w", sub.ID, err)
		}
		total += n
	}
	return total, nil
}

// catchUpFiltered is routeCatchUp for a subscription with filters: the
// feed's deliverable items seen after it was asked for that pass.
func (s *Store) catchUpFiltered(ctx context.Context, sub *Subscription, now time.Time) (int64, error) {
	var items []Item
	if err := s.DB.WithContext(ctx).Select("id, title, content").
		Where("feed_id = ? AND ignored_rule = '' AND seen_at > ?", sub.FeedID, sub.RequestedAt.UTC()).
		Order("id").Find(&items).Error; err != nil {
		return 0, fmt.Errorf("catch up subscription %d: %w", sub.ID, err)
	}
	docs := make([]docOf, len(items))
	for k, it := range items {
		docs[k] = docOf{id: it.ID, doc: filter.NewDoc(it.Title, it.Content)}
	}
	fs := filteredSub{ID: sub.ID, FeedID: sub.FeedID, Digest: sub.DigestID != nil,
		IncludeTerms: sub.IncludeTerms, ExcludeTerms: sub.ExcludeTerms}
	return s.routeToSub(ctx, s.psConn(ctx), fs, passing(sub.IncludeTerms, sub.ExcludeTerms, docs), now)
}

// newestLook is how many of a feed's newest items the newest post that
// passes a subscription's filters is looked for in.
const newestLook = 100

// newestPassing returns the id of the feed's newest item (ordered as
// routeNewestFrom orders them) that passes sub's filters, 0 for none.
func (s *Store) newestPassing(ctx context.Context, sub *Subscription) (int64, error) {
	var items []Item
	if err := s.DB.WithContext(ctx).Select("id, title, content").Where("feed_id = ?", sub.FeedID).
		Order("COALESCE(published_at, seen_at) DESC, id DESC").Limit(newestLook).Find(&items).Error; err != nil {
		return 0, fmt.Errorf("newest posts of feed %d: %w", sub.FeedID, err)
	}
	f, ok := filterOf(sub.IncludeTerms, sub.ExcludeTerms)
	if !ok {
		return 0, nil
	}
	for _, it := range items {
		if f.Pass(filter.NewDoc(it.Title, it.Content)) {
			return it.ID, nil
		}
	}
	return 0, nil
}
