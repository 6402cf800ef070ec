package store

import (
	"context"
	"fmt"
	"time"
)

// The articles behind posts (format "article"): one row per item, shared
// by every reader of the item, so a page is fetched once however many
// subscriptions want it. The mailer asks for a row when it first renders
// an email that wants the article (WantArticles); a worker claims pending
// rows (ClaimArticles) and settles each once (SaveArticle), or gives it
// back unfetched when the host must not be asked now (DeferArticle).

// Article states (ItemArticle.State).
const (
	ArticlePending = "pending"
	ArticleReady   = "ready"
	ArticleFailed  = "failed"
)

// ItemArticle is the article behind one item.
type ItemArticle struct {
	ItemID     int64 `gorm:"primaryKey"`
	State      string
	URL        string // the page the article was read from (after redirects)
	HTML       string // the extracted main text, unsanitized
	TextChars  int    // its length as text, in characters
	Reason     string // why it failed
	NextTryAt  time.Time
	LeaseOwner string
	LeaseUntil *time.Time
	CreatedAt  time.Time
	FetchedAt  *time.Time
}

// ArticleJob is a claimed article to fetch: the item's link and feed.
type ArticleJob struct {
	ItemID    int64
	FeedID    int64
	Link      string
	FeedURL   string
	CreatedAt time.Time
}

// WantArticles makes a pending row, due now, for each item that has none;
// existing rows are left as they are. It is idempotent.
func (s *Store) WantArticles(ctx context.Context, itemIDs []int64) error {
	now := s.now()
	for _, id := range outboxUniq(itemIDs) {
		if err := s.DB.WithContext(ctx).Exec(`INSERT INTO item_articles (item_id, state, next_try_at, created_at)
VALUES (?, ?, ?, ?) ON CONFLICT (item_id) DO NOTHING`, id, ArticlePending, now, now).Error; err != nil {
			return fmt.Errorf("want article of item %d: %w", id, err)
		}
	}
	return nil
}

// ItemArticles returns the article rows of itemIDs (items without one are
// absent from the map), in one query per chunk.
func (s *Store) ItemArticles(ctx context.Context, itemIDs []int64) (map[int64]ItemArticle, error) {
	out := map[int64]ItemArticle{}
	ids := outboxUniq(itemIDs)
	for start := 0; start < len(ids); start += psChunk {
		var rows []ItemArticle
		if err := s.DB.WithContext(ctx).Where("item_id IN ?", ids[start:min(start+psChunk, len(ids))]).
			Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("item articles: %w", err)
		}
		for _, r := range rows {
			out[r.ItemID] = r
		}
	}
	return out, nil
}

// ClaimArticles leases up to limit pending articles due at now to owner
// (moving their due time to the lease's end, as ClaimOutbox does, so a
// worker that dies gives them back) and returns what to fetch, oldest
// first. A pending row whose item is gone is dropped with the item.
func (s *Store) ClaimArticles(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]ArticleJob, error) {
	// A read first: with nothing due (no subscription wants articles) the
	// pass costs one indexed read and takes no write lock (SQLite).
	var due []int64
	if err := s.DB.WithContext(ctx).Model(&ItemArticle{}).Where("state = ? AND next_try_at <= ?", ArticlePending, utc(now)).
		Limit(1).Pluck("item_id", &due).Error; err != nil || len(due) == 0 {
		if err != nil {
			return nil, fmt.Errorf("claim articles: %w", err)
		}
		return nil, nil
	}
	until := utc(now.Add(lease))
	var ids []int64
	q := `UPDATE item_articles SET lease_owner = ?, lease_until = ?, next_try_at = ?
WHERE item_id IN (SELECT item_id FROM item_articles
  WHERE state = 'pending' AND next_try_at <= ?
  ORDER BY next_try_at, item_id LIMIT ?` + s.sqlDialect().skipLocked() + `)
RETURNING item_id`
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, utc(now), limit).Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("claim articles: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var out []ArticleJob
	if err := s.DB.WithContext(ctx).Raw(`SELECT a.item_id, i.feed_id, i.link, f.url AS feed_url, a.created_at
FROM item_articles a JOIN items i ON i.id = a.item_id JOIN feeds f ON f.id = i.feed_id
WHERE a.item_id IN ? ORDER BY a.created_at, a.item_id`, ids).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claimed articles: %w", err)
	}
	return out, nil
}

// SaveArticle settles a claimed article owner holds: ready with its html
// (from url, textChars long as text), or failed with reason when html is
// "". It reports whether owner still held the row.
func (s *Store) SaveArticle(ctx context.Context, owner string, a ItemArticle) (bool, error) {
	state := ArticleReady
	if a.HTML == "" {
		state = ArticleFailed
	}
	now := s.now()
	res := s.DB.WithContext(ctx).Exec(`UPDATE item_articles SET state = ?, url = ?, html = ?, text_chars = ?, reason = ?,
  fetched_at = ?, lease_owner = '', lease_until = NULL
WHERE item_id = ? AND lease_owner = ? AND state = ?`,
		state, a.URL, a.HTML, a.TextChars, outboxClip(a.Reason), now, a.ItemID, owner, ArticlePending)
	if res.Error != nil {
		return false, fmt.Errorf("save article of item %d: %w", a.ItemID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeferArticle gives a claimed article back unfetched, due at next (its
// host is busy or asked us to wait). It reports whether owner still held it.
func (s *Store) DeferArticle(ctx context.Context, owner string, itemID int64, next time.Time) (bool, error) {
	res := s.DB.WithContext(ctx).Exec(`UPDATE item_articles SET next_try_at = ?, lease_owner = '', lease_until = NULL
WHERE item_id = ? AND lease_owner = ? AND state = ?`, utc(next), itemID, owner, ArticlePending)
	if res.Error != nil {
		return false, fmt.Errorf("defer article of item %d: %w", itemID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// WaitOutboxForArticles puts rows owner holds back in the queue, due at
// next, without counting an attempt or starting their blocked_since clock
// (unlike DeferOutbox): their emails wait for their article.
func (s *Store) WaitOutboxForArticles(ctx context.Context, owner string, ids []int64, next time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ? AND state = ?`, utc(next), outboxUniq(ids), owner, OutboxQueued)
	if res.Error != nil {
		return 0, fmt.Errorf("outbox waits for articles: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// FeedArticleSample is what the truncation classifier reads of a feed:
// the content of its newest items and, where an article was fetched for
// one, the article's length as text.
type FeedArticleSample struct {
	Content      string
	ArticleChars int // 0: no article fetched
}

// FeedArticleSamples returns the newest limit delivered items of feedID
// with their articles' lengths, newest first.
func (s *Store) FeedArticleSamples(ctx context.Context, feedID int64, limit int) ([]FeedArticleSample, error) {
	var out []FeedArticleSample
	err := s.DB.WithContext(ctx).Raw(`SELECT i.content, COALESCE(a.text_chars, 0) AS article_chars
FROM items i LEFT JOIN item_articles a ON a.item_id = i.id AND a.state = 'ready'
WHERE i.feed_id = ? AND i.ignored_rule = '' ORDER BY i.seen_at DESC, i.id DESC LIMIT ?`, feedID, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("article samples of feed %d: %w", feedID, err)
	}
	return out, nil
}
