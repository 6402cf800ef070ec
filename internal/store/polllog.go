package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// PollLog is one poll's record for the public status page.
type PollLog struct {
	ID          int64 `gorm:"primaryKey"`
	FeedID      int64
	PolledAt    time.Time
	URL         string
	Status      int
	Outcome     string
	Conditional bool
	Bytes       int64
	ElapsedMS   int `gorm:"column:elapsed_ms"`
	NewItems    int
	Reason      string
	// Seq is the feed's LogSeq with this line recorded; 0 on lines written
	// before lines were folded. See Repeats.
	Seq int64
}

// TableName keeps the singular table name.
func (PollLog) TableName() string { return "poll_log" }

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

// psLogArrays holds poll_log columns of many records, in the order of
// psQuietLogCols.
type psLogArrays struct {
	at                []time.Time
	urls, outcomes    []string
	statuses, elapsed []int32
	conditional       []bool
	bytes             []int64
	reasons           []string
}

// newPSLogArrays makes the slices for n records at once.
func newPSLogArrays(n int) *psLogArrays {
	return &psLogArrays{
		at: make([]time.Time, 0, n), urls: make([]string, 0, n), outcomes: make([]string, 0, n),
		statuses: make([]int32, 0, n), elapsed: make([]int32, 0, n), conditional: make([]bool, 0, n),
		bytes: make([]int64, 0, n), reasons: make([]string, 0, n),
	}
}

func (a *psLogArrays) add(r *PollRecord, now time.Time) {
	a.at, a.urls, a.statuses = append(a.at, r.logAt(now)), append(a.urls, r.URL), append(a.statuses, int32(r.Status))
	a.outcomes, a.conditional, a.bytes = append(a.outcomes, r.Outcome), append(a.conditional, r.Conditional), append(a.bytes, r.Bytes)
	a.elapsed, a.reasons = append(a.elapsed, int32(r.ElapsedMS)), append(a.reasons, r.logReason())
}

func (a *psLogArrays) arrays() []any {
	return []any{a.at, a.urls, a.statuses, a.outcomes, a.conditional, a.bytes, a.elapsed, a.reasons}
}

// psQuietLogCols are the poll_log columns psWriteQuiet carries next to
// psStateCols, in the order of psLogArrays.arrays.
var psQuietLogCols = []psCol{
	{"log_at", "timestamptz"}, {"log_url", "text"}, {"log_status", "integer"}, {"log_outcome", "text"},
	{"log_conditional", "boolean"}, {"log_bytes", "bigint"}, {"log_elapsed_ms", "integer"}, {"log_reason", "text"},
}

// psLogCols are the columns of psAppendPollLog's rows.
var psLogCols = append([]psCol{{"id", "bigint"}, {"new_items", "integer"}}, psQuietLogCols...)

// logAt is the poll_log time of a record: when the poll ended, else now.
func (r *PollRecord) logAt(now time.Time) time.Time {
	if r.At.IsZero() {
		return now
	}
	return utc(r.At)
}

// logReason is the poll_log reason of a record.
func (r *PollRecord) logReason() string {
	if r.Reason == "" {
		return r.State.PollReason
	}
	return r.Reason
}

// psAppendPollLog appends one poll_log row per record in logged.
func (s *Store) psAppendPollLog(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome, logged []int, now time.Time) error {
	if len(logged) == 0 {
		return nil
	}
	// seq: the line is written before the feed's state (which counts the
	// poll or push in log_seq), so it is log_seq + 1.
	const head = `INSERT INTO poll_log (feed_id, polled_at, url, status, outcome, conditional, bytes, elapsed_ms, new_items, reason, seq) `
	if s.sqlDialect().arrayParams() {
		la := newPSLogArrays(len(logged))
		ids, newItems := make([]int64, len(logged)), make([]int32, len(logged))
		for j, i := range logged {
			la.add(&recs[i], now)
			ids[j], newItems[j] = recs[i].FeedID, int32(outs[i].NewDelivered())
		}
		q := s.psNew()
		q.psUnnestV(psLogCols, append([]any{ids, newItems}, la.arrays()...))
		q.sql(head + "SELECT id, log_at, log_url, log_status, log_outcome, log_conditional, log_bytes, log_elapsed_ms, new_items, log_reason,\n" +
			"  (SELECT f.log_seq + 1 FROM feeds f WHERE f.id = v.id) FROM v")
		if _, err := q.exec(ctx, c); err != nil {
			return fmt.Errorf("append poll log: %w", err)
		}
		return nil
	}
	type row struct {
		feedID                   int64
		at                       time.Time
		url, outcome, reason     string
		status, elapsed, newItem int
		conditional              bool
		bytes                    int64
	}
	rows := make([]row, len(logged))
	for j, i := range logged {
		r := &recs[i]
		rows[j] = row{r.FeedID, r.logAt(now), r.URL, r.Outcome, r.logReason(), r.Status, r.ElapsedMS, outs[i].NewDelivered(), r.Conditional, r.Bytes}
	}
	for start := 0; start < len(rows); start += psChunk {
		part := rows[start:min(start+psChunk, len(rows))]
		q := s.psNew().sql(head + "VALUES ")
		for j, r := range part {
			if j > 0 {
				q.sql(", ")
			}
			q.sql("(").arg(r.feedID, "").sql(", ").arg(r.at, "").sql(", ").arg(r.url, "").sql(", ").
				arg(r.status, "").sql(", ").arg(r.outcome, "").sql(", ").arg(r.conditional, "").sql(", ").
				arg(r.bytes, "").sql(", ").arg(r.elapsed, "").sql(", ").arg(r.newItem, "").sql(", ").
				arg(r.reason, "").sql(", (SELECT log_seq + 1 FROM feeds WHERE id = ").arg(r.feedID, "").sql("))")
		}
		if _, err := q.exec(ctx, c); err != nil {
			return fmt.Errorf("append poll log: %w", err)
		}
	}
	return nil
}
