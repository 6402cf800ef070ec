package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// pushPollCols are the feed columns a Fetched push record writes besides
// what any pushed content writes: those of a successful poll.
var pushPollCols = []string{"next_poll_at", "poll_reason", "validator_url", "etag", "last_modified", "body_hash",
	"last_polled_at", "last_status", "last_error", "last_elapsed_ms", "last_success_at", "consecutive_errors",
	"errors_since"}

// pushPolls is the condition under which a pushed row v writes
// pushPollCols: it is Fetched (only then does v.state hold a state, see
// psPushStates), the feed is active, and no poll was recorded and no ping
// came since v's request went out (either says more than v does).
const pushPolls = `v.state = 'active' AND feeds.state = 'active'
    AND (feeds.last_polled_at IS NULL OR feeds.last_polled_at < v.fetched_at)
    AND (feeds.last_ping_at IS NULL OR feeds.last_ping_at < v.fetched_at)`

// psPushStates writes the state of the pushed records recs[part...] with
// one UPDATE … FROM a VALUES list (unnest on Postgres) per chunk, the rows
// of psStateCols: title and site when given, primed_at when unset,
// last_new_item_at when given, newest_item_date when later, and for a
// Fetched record the columns of a poll (pushPolls). No lease is needed or
// cleared.
func (s *Store) psPushStates(ctx context.Context, c gorm.ConnPool, recs []PollRecord, part []int, now time.Time) error {
	rows := make([]PollRecord, len(part))
	for j, i := range part {
		rows[j] = recs[i]
		if !rows[j].Fetched {
			rows[j].State.State = "" // see pushPolls
		}
	}
	for start, chunk := 0, s.psChunkOf(len(rows)); start < len(rows); start += chunk {
		if err := s.psPushChunk(ctx, c, rows[start:min(start+chunk, len(rows))], now); err != nil {
			return err
		}
	}
	return nil
}

// psPushChunk is one statement of psPushStates.
func (s *Store) psPushChunk(ctx context.Context, c gorm.ConnPool, rows []PollRecord, now time.Time) error {
	q := s.psNew()
	ptrs := make([]*PollRecord, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	s.psStateValues(q, ptrs)
	q.sql(`
UPDATE feeds SET
  title = COALESCE(NULLIF(v.title, ''), feeds.title),
  site_url = COALESCE(NULLIF(v.site_url, ''), feeds.site_url),
  primed_at = COALESCE(feeds.primed_at, v.primed_at),
  last_new_item_at = COALESCE(v.last_new_item_at, feeds.last_new_item_at),
  newest_item_date = CASE WHEN feeds.newest_item_date IS NULL OR feeds.newest_item_date < v.newest_item_date
    THEN COALESCE(v.newest_item_date, feeds.newest_item_date) ELSE feeds.newest_item_date END,`)
	var b strings.Builder
	for _, col := range pushPollCols {
		fmt.Fprintf(&b, "\n  %s = CASE WHEN %s THEN v.%s ELSE feeds.%s END,", col, pushPolls, col, col)
	}
	q.sql(b.String(), "\n  log_seq = feeds.log_seq + 1, logged_at = NULL, updated_at = ").arg(now, "timestamptz").
		sql("\nFROM v WHERE feeds.id = v.id")
	if _, err := q.exec(ctx, c); err != nil {
		return fmt.Errorf("write pushed feed state: %w", err)
	}
	return nil
}
