package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Recording a poll: its whole effect is written in ONE transaction by
// RecordPoll or RecordPolls, in this order: (1) check, and on Postgres
// lock, that owner still holds each feed (heldBy), leaving out the feeds
// whose lease was lost; (2) insert the new items, ON CONFLICT DO NOTHING,
// so a replayed poll inserts and delivers nothing again, and update the
// edited ones (items_edit.go), then apply burst protection to the new
// posts (pollwrite_burst.go); (3) route the
// inserted items (fanout.go); (4) end or merge feeds; (5) append poll_log;
// (6) last, write the feeds' state and clear their leases, guarded by
// heldBy. A crash before the commit leaves nothing: the lease runs out and
// the feed is polled again. Only subscriptions active when an item is
// first seen get it; a gone feed's pending subscriptions end silently.

// ErrLeaseLost is returned by RecordPoll when owner no longer holds the
// feed's lease (it expired and another worker claimed the feed). Nothing of
// the poll was written.
var ErrLeaseLost = errors.New("feed lease lost")

// PollRecord is everything one poll (or one pushed document) produced for
// one feed.
type PollRecord struct {
	FeedID int64
	At     time.Time // when the poll ended (poll_log.polled_at, seen_at)
	// FetchedAt is when the poll's request went out: a ping queued at or
	// after it makes the feed due again at once (see PingFeed). Zero takes
	// up any queued ping.
	FetchedAt time.Time

	// poll_log
	URL         string
	Status      int
	Outcome     string
	Conditional bool
	Bytes       int64
	ElapsedMS   int
	Reason      string // "" means State.PollReason

	Items []NewItem
	// Edits are new versions of items the feed already recorded (see
	// items_edit.go).
	Edits []ItemEdit
	State FeedState

	// Push marks content a WebSub hub pushed: no lease is needed or cleared,
	// and of the state only Title, SiteURL, PrimedAt (if unset),
	// LastNewItemAt and NewestItemDate (if later) are written; validators,
	// schedule and error streak are left to polls.
	Push bool
	// Fetched marks pushed content a fetch of the feed's own brought (the
	// check of a signup or an import): the poll columns of State are
	// written too (see pushstate.go), so the next poll is conditional and
	// comes when the schedule says, not at once.
	Fetched bool
	// End ends the feed's service (410, blacklisting): see FeedEnd.
	End *FeedEnd
	// Fold counts this poll without a poll_log line: the poller sets it when
	// the poll repeats the feed's newest line (see poller's choices). Only a
	// quiet record (see quiet) is folded; the feed's log_seq counts it
	// either way, so the polls folded into a line are the gap between its
	// seq and the next line's (Repeats). A folded record promises that of
	// State only NextPollAt, PollReason, ValidatorURL, ETag, LastModified,
	// LastPolledAt, LastElapsedMS and LastSuccessAt differ from the stored
	// row (a repeated 304): on Postgres only those are written.
	Fold bool
	// MergeInto, when non-zero, merges this feed into that feed (a permanent
	// redirect to its URL): subscriptions move there (a person already
	// subscribed there keeps that one and this one ends), this feed's item
	// identities are copied there as seen, so nothing already mailed is
	// mailed again, and the target is made due now. State.State should be
	// FeedMerged.
	MergeInto int64
}

// PollOutcome is what RecordPoll wrote for one record.
type PollOutcome struct {
	Lost        bool           // the lease was lost: nothing was written for this record
	Items       []RecordedItem // items inserted now (not known before)
	Edited      int64          // known items updated to a new version (edited posts)
	Emails      int64          // outbox rows queued or held
	DigestItems int64          // digest_items rows queued
	Filtered    int64          // (subscription, item) pairs a filter left out
	Notices     int            // notices queued (End)
	Moved       int64          // subscriptions moved (MergeInto)
}

// NewDelivered counts the inserted items that were not ignored.
func (o PollOutcome) NewDelivered() int {
	n := 0
	for _, it := range o.Items {
		if it.IgnoredRule == "" {
			n++
		}
	}
	return n
}

// RecordPoll writes one poll in one transaction (see above). It returns
// ErrLeaseLost, having written nothing, when owner no longer holds the
// feed's lease. A Push record needs no lease.
func (s *Store) RecordPoll(ctx context.Context, owner string, r PollRecord) (PollOutcome, error) {
	outs, err := s.RecordPolls(ctx, owner, []PollRecord{r})
	if err != nil {
		return PollOutcome{}, err
	}
	if outs[0].Lost {
		return outs[0], fmt.Errorf("record poll of feed %d: %w", r.FeedID, ErrLeaseLost)
	}
	return outs[0], nil
}

// RecordPolls writes many polls (at most one per feed) in one transaction,
// with multi-row statements, so a pass over thousands of unchanged feeds
// costs a few statements per few hundred feeds. Each record is still guarded
// by its own lease: a record whose lease was lost is left out (its outcome
// says Lost) and the others are written. outs[i] belongs to recs[i].
func (s *Store) RecordPolls(ctx context.Context, owner string, recs []PollRecord) ([]PollOutcome, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	seen := make(map[int64]bool, len(recs))
	for _, r := range recs {
		if seen[r.FeedID] {
			return nil, fmt.Errorf("record polls: feed %d appears twice in one batch", r.FeedID)
		}
		seen[r.FeedID] = true
	}
	var outs []PollOutcome
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		outs, err = tx.recordPollsTx(ctx, owner, recs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record polls: %w", err)
	}
	return outs, nil
}

// recordPollsSteps writes recs step by step, in the order the comment at
// the top of this file gives.
func (s *Store) recordPollsSteps(ctx context.Context, owner string, recs []PollRecord) ([]PollOutcome, error) {
	c := s.psConn(ctx)
	if err := s.useGenericPlans(ctx, c); err != nil {
		return nil, err
	}
	outs := make([]PollOutcome, len(recs))
	now := s.now()
	idx, err := s.holdLeases(ctx, c, owner, recs, outs)
	if err != nil {
		return nil, err
	}
	if len(idx) == 0 {
		return outs, nil
	}
	deliver, err := s.insertItems(ctx, c, recs, outs, idx, now)
	if err != nil {
		return nil, err
	}
	if err := s.updateEditedItems(ctx, c, recs, outs); err != nil {
		return nil, err
	}
	if err := s.applyBurstRule(ctx, c, recs, outs, now); err != nil {
		return nil, err
	}
	if err := s.routeNewItems(ctx, c, recs, outs, idx, deliver, now); err != nil {
		return nil, err
	}
	if err := s.endAndMergeFeeds(ctx, c, recs, outs, now); err != nil {
		return nil, err
	}
	var logged []int
	for i := range recs {
		if !outs[i].Lost && !recs[i].folded() {
			logged = append(logged, i)
		}
	}
	if err := s.psAppendPollLog(ctx, c, recs, outs, logged, now); err != nil {
		return nil, err
	}
	if err := s.writePolledStates(ctx, c, owner, recs, outs, now); err != nil {
		return nil, err
	}
	return outs, nil
}

// holdLeases is step 1: it checks (and on Postgres locks) the leases of
// the polled records, marks the records whose lease was lost, and returns
// the index of every record that is written, by feed id.
func (s *Store) holdLeases(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, outs []PollOutcome) (map[int64]int, error) {
	var leased []int64
	for _, r := range recs {
		if !r.Push {
			leased = append(leased, r.FeedID)
		}
	}
	held, err := s.psHeldLeases(ctx, c, owner, leased)
	if err != nil {
		return nil, err
	}
	idx := make(map[int64]int, len(recs)) // feed id → index of a record that is written
	for i, r := range recs {
		if !r.Push && !held[r.FeedID] {
			outs[i].Lost = true
			continue
		}
		idx[r.FeedID] = i
	}
	return idx, nil
}

// psHeldLeases returns which of ids owner holds the lease of, locking those
// rows on Postgres until the transaction ends.
func (s *Store) psHeldLeases(ctx context.Context, c gorm.ConnPool, owner string, ids []int64) (map[int64]bool, error) {
	held := make(map[int64]bool, len(ids))
	if len(ids) == 0 {
		return held, nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for start, chunk := 0, s.psChunkOf(len(ids)); start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		q := s.psNew().sql("SELECT id FROM feeds WHERE id").in(part).sql(" AND ").heldBy(owner, s.now())
		q.sql(q.d.lockOrderedBy("id"))
		rows, err := q.query(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("check leases: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			held[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return held, nil
}
