package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm/clause"
)

// Feeds in bulk, for an import of many feeds at once: a few statements per
// few hundred feeds instead of a few per feed.

// FeedsByURL returns the feeds with these URLs (absent URLs are absent from
// the map), a few statements however many URLs.
func (s *Store) FeedsByURL(ctx context.Context, urls []string) (map[string]*Feed, error) {
	out := make(map[string]*Feed, len(urls))
	for start := 0; start < len(urls); start += psChunk {
		part := urls[start:min(start+psChunk, len(urls))]
		var rows []Feed
		if err := s.DB.WithContext(ctx).Where("url IN ?", part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("feeds by URL: %w", err)
		}
		for i := range rows {
			out[rows[i].URL] = &rows[i]
		}
	}
	return out, nil
}

// FeedsByID returns the feeds with these ids (absent ids are absent from
// the map), a few statements however many ids.
func (s *Store) FeedsByID(ctx context.Context, ids []int64) (map[int64]*Feed, error) {
	out := make(map[int64]*Feed, len(ids))
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		var rows []Feed
		if err := s.DB.WithContext(ctx).Where("id IN ?", part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("feeds by id: %w", err)
		}
		for i := range rows {
			out[rows[i].ID] = &rows[i]
		}
	}
	return out, nil
}

// ensureFeedsChunk is how many feeds one INSERT of EnsureFeeds writes: the
// feeds table is wide (about 40 columns) and SQLite takes at most 32,766
// parameters a statement.
const ensureFeedsChunk = 200

// EnsureFeeds is EnsureFeed for many URLs: the feeds missing are created
// (due now) with multi-row inserts, and every feed is returned by URL. A
// feed another process creates meanwhile is found, not duplicated.
func (s *Store) EnsureFeeds(ctx context.Context, urls []string) (map[string]*Feed, error) {
	have, err := s.FeedsByURL(ctx, urls)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var missing []Feed
	seen := make(map[string]bool, len(urls))
	for _, u := range urls {
		if have[u] == nil && !seen[u] {
			seen[u] = true
			missing = append(missing, Feed{URL: u, State: FeedActive, NextPollAt: now, PollReason: "new feed: first poll",
				CreatedAt: now, UpdatedAt: now})
		}
	}
	if len(missing) == 0 {
		return have, nil
	}
	// With conflicts skipped, the ids an insert returns need not match the
	// rows given: the created feeds are read back by URL instead.
	if err := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		CreateInBatches(&missing, ensureFeedsChunk).Error; err != nil {
		return nil, fmt.Errorf("create feeds: %w", err)
	}
	urlsMissing := make([]string, len(missing))
	for i := range missing {
		urlsMissing[i] = missing[i].URL
	}
	created, err := s.FeedsByURL(ctx, urlsMissing)
	if err != nil {
		return nil, err
	}
	for u, f := range created {
		have[u] = f
	}
	return have, nil
}

// FeedMeta is a feed's title and site address as a check learned them.
type FeedMeta struct {
	FeedID         int64
	Title, SiteURL string
}

// SetFeedsMetaIfEmpty is SetFeedMetaIfEmpty for many feeds: two
// statements per few hundred feeds.
func (s *Store) SetFeedsMetaIfEmpty(ctx context.Context, metas []FeedMeta) error {
	for start := 0; start < len(metas); start += psChunk {
		part := metas[start:min(start+psChunk, len(metas))]
		titles, sites := map[int64]string{}, map[int64]string{}
		for _, m := range part {
			if m.Title != "" {
				titles[m.FeedID] = m.Title
			}
			if m.SiteURL != "" {
				sites[m.FeedID] = m.SiteURL
			}
		}
		for _, c := range []struct {
			col  string
			vals map[int64]string
		}{{"title", titles}, {"site_url", sites}} {
			if err := s.setIfEmpty(ctx, c.col, c.vals); err != nil {
				return err
			}
		}
	}
	return nil
}

// setIfEmpty sets column col of each feed of vals that has it empty, in one
// statement, locking the rows in id order first (on Postgres) as the
// poller's writes do.
func (s *Store) setIfEmpty(ctx context.Context, col string, vals map[int64]string) error {
	if len(vals) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(vals))
	for id := range vals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	args := make([]any, 0, 2*len(ids)+1)
	b.WriteString("UPDATE feeds SET " + col + " = CASE id")
	for _, id := range ids {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, id, vals[id])
	}
	b.WriteString(" ELSE " + col + " END WHERE id IN (SELECT id FROM feeds WHERE id IN ? AND " + col + " = ''" +
		s.sqlDialect().lockOrderedBy("id") + ")")
	args = append(args, ids)
	if err := s.DB.WithContext(ctx).Exec(b.String(), args...).Error; err != nil {
		return fmt.Errorf("feeds' %s: %w", col, err)
	}
	return nil
}
