package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// recordPollsTx writes recs inside the caller's transaction. On Postgres the
// quiet records (see quiet) are written first by one statement, and the
// others by recordPollsSteps.
func (s *Store) recordPollsTx(ctx context.Context, owner string, recs []PollRecord) ([]PollOutcome, error) {
	if !s.sqlDialect().arrayParams() {
		return s.recordPollsSteps(ctx, owner, recs)
	}
	var quiet, busy []int
	for i := range recs {
		if recs[i].quiet() {
			quiet = append(quiet, i)
		} else {
			busy = append(busy, i)
		}
	}
	if len(quiet) == 0 {
		return s.recordPollsSteps(ctx, owner, recs)
	}
	outs := make([]PollOutcome, len(recs))
	held, err := s.psWriteQuiet(ctx, s.psConn(ctx), owner, recs, quiet, s.now())
	if err != nil {
		return nil, err
	}
	for _, i := range quiet {
		outs[i].Lost = !held[recs[i].FeedID]
	}
	if len(busy) == 0 {
		return outs, nil
	}
	rest := make([]PollRecord, len(busy))
	for j, i := range busy {
		rest[j] = recs[i]
	}
	routs, err := s.recordPollsSteps(ctx, owner, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range busy {
		outs[i] = routs[j]
	}
	return outs, nil
}

// folded reports whether r is counted without a poll_log line.
func (r *PollRecord) folded() bool { return r.Fold && r.quiet() }

// quiet reports whether a record is a plain poll with nothing to deliver or
// end: no items, no edits, no ending, no merge, not pushed content. Most polls are (a
// 304, an unchanged body, an error), and on Postgres they take the single
// statement of psWriteQuiet.
func (r *PollRecord) quiet() bool {
	return !r.Push && len(r.Items) == 0 && len(r.Edits) == 0 && r.End == nil && (r.MergeInto == 0 || r.MergeInto == r.FeedID)
}

// psQuietCols are the columns of psWriteQuiet's rows.
var psQuietCols = append(append([]psCol(nil), psStateCols...), psQuietLogCols...)

// psWriteQuiet writes the quiet records recs[part...] (see
// PollRecord.quiet): the folded ones with psWriteFolded, the others with ONE
// statement: the state of each feed whose lease owner still holds, and a
// poll_log row for each of those (none of them folded, so each gets its
// line; the v.fold column psStateSet reads is false). It returns the
// ids of the feeds written; the others' leases were lost and nothing of
// theirs was written. No SELECT … FOR UPDATE is needed first: the UPDATE
// itself is guarded by heldBy, and with nothing else to write there is
// nothing to decide before it.
func (s *Store) psWriteQuiet(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, part []int, now time.Time) (map[int64]bool, error) {
	var folded, logged []int
	for _, i := range part {
		if recs[i].folded() {
			folded = append(folded, i)
		} else {
			logged = append(logged, i)
		}
	}
	held := make(map[int64]bool, len(part))
	if len(folded) > 0 {
		if err := s.psWriteFolded(ctx, c, owner, recs, folded, now, held); err != nil {
			return nil, err
		}
	}
	if len(logged) == 0 {
		return held, nil
	}
	sa, la := newPSStateArrays(len(logged)), newPSLogArrays(len(logged))
	for _, i := range logged {
		sa.add(&recs[i])
		la.add(&recs[i], now)
	}
	q := s.psNew()
	q.psUnnestV(psQuietCols, append(sa.arrays(), la.arrays()...))
	q.sql(",\nu AS (UPDATE feeds SET ")
	psStateSet(q, now).sql("\n  FROM v WHERE feeds.id = v.id AND ").heldBy(owner, now).sql(` RETURNING feeds.id, feeds.log_seq),
l AS (INSERT INTO poll_log (feed_id, polled_at, url, status, outcome, conditional, bytes, elapsed_ms, new_items, reason, seq)
  SELECT v.id, v.log_at, v.log_url, v.log_status, v.log_outcome, v.log_conditional, v.log_bytes, v.log_elapsed_ms, 0, v.log_reason, u.log_seq
  FROM v JOIN u ON u.id = v.id)
SELECT id FROM u`)
	if err := psReadHeld(ctx, c, q, held); err != nil {
		return nil, fmt.Errorf("write feed state and poll log: %w", err)
	}
	return held, nil
}

// psFoldCols are the columns of psWriteFolded's rows: the only ones a
// folded poll may change (see PollRecord.Fold).
var psFoldCols = []psCol{
	{"id", "bigint"}, {"next_poll_at", "timestamptz"}, {"poll_reason", "text"}, {"validator_url", "text"},
	{"etag", "text"}, {"last_modified", "text"}, {"last_polled_at", "timestamptz"},
	{"last_elapsed_ms", "integer"}, {"last_success_at", "timestamptz"}, {"fetched_at", "timestamptz"},
}

// psWriteFolded writes the folded records recs[part...] (no poll_log line)
// with one UPDATE that carries only psFoldCols, the columns a repeated 304
// changes. It adds the ids of the feeds written to held.
func (s *Store) psWriteFolded(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, part []int, now time.Time, held map[int64]bool) error {
	n := len(part)
	ids, next, polled, success := make([]int64, 0, n), make([]time.Time, 0, n), make([]*time.Time, 0, n), make([]*time.Time, 0, n)
	reasons, vurls, etags, lms := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	elapsed, fetched := make([]int32, 0, n), make([]time.Time, 0, n)
	for _, i := range part {
		r := &recs[i]
		st := &r.State
		ids, next, reasons = append(ids, r.FeedID), append(next, st.NextPollAt), append(reasons, st.PollReason)
		fetched = append(fetched, r.FetchedAt)
		vurls, etags, lms = append(vurls, st.ValidatorURL), append(etags, st.ETag), append(lms, st.LastModified)
		polled, elapsed, success = append(polled, st.LastPolledAt), append(elapsed, int32(st.LastElapsedMS)), append(success, st.LastSuccessAt)
	}
	q := s.psNew()
	q.psUnnestV(psFoldCols, []any{ids, next, reasons, vurls, etags, lms, polled, elapsed, success, fetched})
	q.sql(`
UPDATE feeds SET validator_url = v.validator_url,
  etag = v.etag, last_modified = v.last_modified, last_polled_at = v.last_polled_at,
  last_elapsed_ms = v.last_elapsed_ms, last_success_at = v.last_success_at,
  log_seq = feeds.log_seq + 1, lease_owner = '', lease_until = NULL,`)
	// A folded poll leaves the feed active (see PollRecord.Fold).
	psQueuedPing(q, "'active'", now).sql(", updated_at = ").arg(now, "timestamptz").
		sql("\nFROM v WHERE feeds.id = v.id AND ").heldBy(owner, now).sql(" RETURNING feeds.id")
	if err := psReadHeld(ctx, c, q, held); err != nil {
		return fmt.Errorf("write folded polls: %w", err)
	}
	return nil
}

// psReadHeld runs q, which returns feed ids, and adds them to held.
func psReadHeld(ctx context.Context, c gorm.ConnPool, q *psQuery, held map[int64]bool) error {
	rows, err := q.query(ctx, c)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		held[id] = true
	}
	return rows.Err()
}
