package store

import (
	"context"
	"fmt"
	"maps"
)

// NewFeed is a feed an import names: its URL, the title its list gives it,
// and how many active subscriptions the import is adding to it.
type NewFeed struct {
	URL         string
	Title       string
	Subscribers int
}

// EnsureNewFeeds is EnsureFeeds for an import that knows what it adds:
// the feeds missing are created (due now) with their title and their
// subscriber count already counting the import's subscriptions, so that
// no row is written twice. It returns every feed by URL and the ids of
// those it created (a feed another process creates meanwhile is found,
// not created). A URL must appear once in feeds.
func (s *Store) EnsureNewFeeds(ctx context.Context, feeds []NewFeed) (map[string]*Feed, map[int64]bool, error) {
	urls := make([]string, len(feeds))
	for i, f := range feeds {
		urls[i] = f.URL
	}
	have, err := s.FeedsByURL(ctx, urls)
	if err != nil {
		return nil, nil, err
	}
	var missing []NewFeed
	for _, f := range feeds {
		if have[f.URL] == nil {
			missing = append(missing, f)
		}
	}
	created := make(map[int64]bool, len(missing))
	step := s.rowsPerInsert(9)
	for start := 0; start < len(missing); start += step {
		made, err := s.createFeeds(ctx, missing[start:min(start+step, len(missing))])
		if err != nil {
			return nil, nil, err
		}
		for _, f := range made {
			have[f.URL], created[f.ID] = f, true
		}
	}
	if len(created) < len(missing) { // some were created meanwhile
		var raced []string
		for _, f := range missing {
			if have[f.URL] == nil {
				raced = append(raced, f.URL)
			}
		}
		found, err := s.FeedsByURL(ctx, raced)
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(have, found)
	}
	return have, created, nil
}

// createFeeds inserts feeds (skipping any URL that exists) in one
// statement and returns those it inserted.
func (s *Store) createFeeds(ctx context.Context, feeds []NewFeed) ([]*Feed, error) {
	now := s.now()
	const reason = "new feed: first poll"
	args := make([]any, 0, 9*len(feeds))
	byURL := make(map[string]NewFeed, len(feeds))
	for _, f := range feeds {
		args = append(args, f.URL, HostOf(f.URL), f.Title, FeedActive, f.Subscribers, now, reason, now, now)
		byURL[f.URL] = f
	}
	rows, err := s.DB.WithContext(ctx).Raw("INSERT INTO feeds (url, host, title, state, subscriber_count, next_poll_at, poll_reason, created_at, updated_at) VALUES "+
		valuesRows(9, len(feeds))+" ON CONFLICT (url) DO NOTHING RETURNING id, url", args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("create feeds: %w", err)
	}
	defer rows.Close()
	var made []*Feed
	for rows.Next() {
		f := &Feed{State: FeedActive, NextPollAt: now, PollReason: reason, CreatedAt: now, UpdatedAt: now}
		if err := rows.Scan(&f.ID, &f.URL); err != nil {
			return nil, fmt.Errorf("create feeds: %w", err)
		}
		n := byURL[f.URL]
		f.Host, f.Title, f.SubscriberCount = HostOf(f.URL), n.Title, n.Subscribers
		made = append(made, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("create feeds: %w", err)
	}
	return made, nil
}
