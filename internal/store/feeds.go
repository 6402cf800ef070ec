package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// EnsureFeed returns the feed with this URL, creating it (due now) when absent.
func (s *Store) EnsureFeed(ctx context.Context, url string) (f *Feed, created bool, err error) {
	now := s.now()
	nf := Feed{URL: url, State: FeedActive, NextPollAt: now, PollReason: "new feed: first poll",
		CreatedAt: now, UpdatedAt: now}
	res := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&nf)
	if res.Error != nil {
		return nil, false, fmt.Errorf("create feed: %w", res.Error)
	}
	f, err = s.FeedByURL(ctx, url)
	return f, res.RowsAffected == 1, err
}

// HostKey is the feed's host key (HostOf of its URL): the stored Host, or
// worked out from the URL for a row not filled in yet.
func (f *Feed) HostKey() string {
	if f.Host != "" {
		return f.Host
	}
	return HostOf(f.URL)
}

// BeforeSave keeps Host in step with URL whenever gorm writes a Feed
// (raw statements that change a URL set host themselves).
func (f *Feed) BeforeSave(*gorm.DB) error {
	f.Host = HostOf(f.URL)
	return nil
}

// FeedByURL looks a feed up by its URL.
func (s *Store) FeedByURL(ctx context.Context, url string) (*Feed, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Where("url = ?", url).Take(&f).Error; err != nil {
		return nil, fmt.Errorf("feed %s: %w", url, notFound(err))
	}
	return &f, nil
}

// FeedByID looks a feed up by id.
func (s *Store) FeedByID(ctx context.Context, id int64) (*Feed, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Take(&f, id).Error; err != nil {
		return nil, fmt.Errorf("feed %d: %w", id, notFound(err))
	}
	return &f, nil
}

// Repeats returns, for lines (poll_log lines of feed f, newest first, as
// RecentPolls and FeedForStatus return them), how many more polls each line
// stands for: the identical polls folded into it (PollRecord.Fold), the gap
// between its seq and the next line's (or the feed's log_seq). Lines written
// before polls were folded (seq 0) get 0.
func Repeats(f *Feed, lines []PollLog) []int64 {
	out := make([]int64, len(lines))
	next := f.LogSeq + 1
	for i, l := range lines {
		if l.Seq > 0 && next > l.Seq {
			out[i] = next - l.Seq - 1
		}
		next = l.Seq
	}
	return out
}

// RecentPolls returns the last n polls of a feed, newest first.
func (s *Store) RecentPolls(ctx context.Context, feedID int64, n int) ([]PollLog, error) {
	var out []PollLog
	err := s.DB.WithContext(ctx).Where("feed_id = ?", feedID).Order("polled_at DESC, id DESC").Limit(n).Find(&out).Error
	return out, err
}

// CountDueFeeds counts active, subscribed feeds due at the store clock's now
// and not being polled (no unexpired lease): a queue depth for metrics.
func (s *Store) CountDueFeeds(ctx context.Context) (int64, error) {
	var n int64
	now := s.now()
	err := s.DB.WithContext(ctx).Model(&Feed{}).
		Where("state = ? AND subscriber_count > 0 AND next_poll_at <= ? AND (lease_until IS NULL OR lease_until <= ?)", FeedActive, now, now).
		Count(&n).Error
	return n, err
}
