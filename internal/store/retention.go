package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RetainedTable names a table whose old rows a retention pass deletes.
type RetainedTable string

// The tables retention walks. Each is walked along its primary key, whose
// order is the order rows were written, so a pass reads the oldest rows
// first and stops at the first row young enough to keep.
const (
	RetainOutbox      RetainedTable = "outbox"
	RetainItems       RetainedTable = "items"
	RetainLedger      RetainedTable = "ledger_entries"
	RetainPollLog     RetainedTable = "poll_log"
	RetainDigestItems RetainedTable = "digest_items"
	// RetainRateLimits is not walked by id: its keys whose count is back
	// to full go at once (PruneRateLimits).
	RetainRateLimits RetainedTable = "rate_limits"
)

// RetainedRow is one row as a retention rule sees it. At is the time the
// row is judged by (outbox created_at, items seen_at, ledger created_at,
// poll_log polled_at, digest_items queued_at); the other fields are those
// of its table's rule and zero elsewhere.
type RetainedRow struct {
	ID int64
	At time.Time
	// State is the outbox row's state or the ledger entry's kind.
	State string
	// Published is the item's date; Newest the feed's newest item date.
	Published, Newest *time.Time
	// HasContent: the item still carries its content or media.
	HasContent bool
	// Superseded: the ledger entry is not its account's newest; the
	// digest item is issued.
	Superseded bool
}

// retentionSelect is the statement that reads a table's next rows after
// an id, in id order.
var retentionSelect = map[RetainedTable]string{
	RetainOutbox: `SELECT id, created_at AS at, state FROM outbox WHERE id > ? ORDER BY id LIMIT ?`,
	RetainItems: `SELECT i.id, i.seen_at AS at, i.published_at AS published, f.newest_item_date AS newest,
  (i.content <> '' OR i.media <> '') AS has_content
FROM items i JOIN feeds f ON f.id = i.feed_id WHERE i.id > ? ORDER BY i.id LIMIT ?`,
	RetainLedger: `SELECT l.id, l.created_at AS at, l.kind AS state,
  EXISTS (SELECT 1 FROM ledger_entries n WHERE n.user_id = l.user_id AND n.id > l.id) AS superseded
FROM ledger_entries l WHERE l.id > ? ORDER BY l.id LIMIT ?`,
	RetainPollLog:     `SELECT id, polled_at AS at FROM poll_log WHERE id > ? ORDER BY id LIMIT ?`,
	RetainDigestItems: `SELECT id, queued_at AS at, (issue_id IS NOT NULL) AS superseded FROM digest_items WHERE id > ? ORDER BY id LIMIT ?`,
}

// RetentionRows returns at most limit rows of t with ids above after, in
// id order: one indexed range read, however large the table.
func (s *Store) RetentionRows(ctx context.Context, t RetainedTable, after int64, limit int) ([]RetainedRow, error) {
	q, ok := retentionSelect[t]
	if !ok {
		return nil, fmt.Errorf("retention: unknown table %q", t)
	}
	var rows []RetainedRow
	if err := s.DB.WithContext(ctx).Raw(q, after, max(limit, 1)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("retention: read %s: %w", t, err)
	}
	return rows, nil
}

// DeleteRetained deletes the rows of t with the given ids and returns how
// many went. Deleting a row that is already gone is not an error, so two
// processes pruning at once do no harm.
func (s *Store) DeleteRetained(ctx context.Context, t RetainedTable, ids []int64) (int64, error) {
	if _, ok := retentionSelect[t]; !ok {
		return 0, fmt.Errorf("retention: unknown table %q", t)
	}
	var n int64
	for part := range slices.Chunk(ids, psChunk) {
		res := s.DB.WithContext(ctx).Table(string(t)).Where("id IN ?", part).Delete(map[string]any{})
		if res.Error != nil {
			return n, fmt.Errorf("retention: delete from %s: %w", t, res.Error)
		}
		n += res.RowsAffected
	}
	return n, nil
}

// ClearItemContent empties the content and media of the given items,
// keeping what identifies them (identity, link, title, dates), so a post
// seen long ago is still known and never sent again. It returns how many
// items changed.
func (s *Store) ClearItemContent(ctx context.Context, ids []int64) (int64, error) {
	var n int64
	for part := range slices.Chunk(ids, psChunk) {
		res := s.DB.WithContext(ctx).Model(&Item{}).Where("id IN ? AND (content <> '' OR media <> '')", part).
			UpdateColumns(map[string]any{"content": "", "media": ""})
		if res.Error != nil {
			return n, fmt.Errorf("retention: clear item content: %w", res.Error)
		}
		n += res.RowsAffected
	}
	return n, nil
}
