package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Recording a poll.
//
// A poll's whole effect — the items it found, the emails and digest rows they
// fan out to, the poll_log line and the feed's new state — is written in ONE
// transaction by RecordPoll (one feed) or RecordPolls (many feeds, one
// transaction, for the poller's batched writes). Inside it the order is:
//
//  1. check that owner still holds each feed (heldBy: its lease, or on
//     Postgres its host's lease; SELECT … FOR UPDATE on
//     Postgres; SQLite transactions are BEGIN IMMEDIATE, one writer at a
//     time); feeds whose lease was lost are left out entirely;
//  2. insert the new items, a multi-row INSERT … ON CONFLICT (feed_id,
//     identity) DO NOTHING RETURNING id, so an item already recorded (a
//     replayed poll, a hub push racing a poll) is neither inserted nor
//     delivered again;
//  3. fan out the inserted, deliverable items with INSERT … SELECT from
//     subscriptions (one statement for all items of all feeds of the batch
//     per kind, never one per subscriber): one outbox row per active instant
//     subscription (dedupe key "item:<subscription>:<item>") and one
//     digest_items row per active digest subscription (unique (subscription,
//     item)), both ON CONFLICT DO NOTHING;
//  4. end subscriptions and queue notices (410 Gone, blacklisting), or merge
//     the feed into another one (a 301/308 to a URL that is already a feed);
//  5. append poll_log;
//  6. last, write the feed's new state and clear its lease, guarded by
//     heldBy.
//
// A crash anywhere before the commit leaves nothing behind: the lease runs
// out, the feed is due again and is polled again; the unique keys make that
// replay harmless.
//
// Choices the product rules (docs/design.md) leave open:
//
//   - Outbox rows for a person whose address is bouncing are written "held"
//     with last_error HoldBouncing (ClearBouncing releases them), not skipped:
//     the post is not lost if the address recovers, and the mailer's hold
//     limit expires them otherwise. Credits are not looked at here: the
//     mailer charges (or holds for credits) when it sends.
//   - Only subscriptions that are active when the item is first seen get it;
//     pending ones (not confirmed yet) do not.
//   - A gone feed's active subscribers get the notice; pending subscriptions
//     are ended silently.

// ErrLeaseLost is returned by RecordPoll when owner no longer holds the
// feed's lease (it expired and another worker claimed the feed). Nothing of
// the poll was written.
var ErrLeaseLost = errors.New("feed lease lost")

// PollRecord is everything one poll (or one pushed document) produced for
// one feed.
type PollRecord struct {
	FeedID int64
	At     time.Time // when the poll ended (poll_log.polled_at, seen_at)

	// poll_log
	URL         string
	Status      int
	Outcome     string
	Conditional bool
	Bytes       int64
	ElapsedMS   int
	Reason      string // "" means State.PollReason

	Items []NewItem
	State FeedState

	// Push marks content a WebSub hub pushed: no lease is needed or cleared,
	// and of the state only Title, SiteURL, PrimedAt (if unset),
	// LastNewItemAt and NewestItemDate (if later) are written; validators,
	// schedule and error streak are left to polls.
	Push bool
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
	Emails      int64          // outbox rows queued or held
	DigestItems int64          // digest_items rows queued
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
	outs := make([]PollOutcome, len(recs))
	now := s.now()

	// 1. Leases.
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
	if len(idx) == 0 {
		return outs, nil
	}

	// 2. Items.
	type itemRow struct {
		rec int
		it  *NewItem
	}
	var pending []itemRow
	for i, r := range recs {
		if outs[i].Lost {
			continue
		}
		for k := range r.Items {
			pending = append(pending, itemRow{i, &recs[i].Items[k]})
		}
	}
	var deliver []int64
	insert := func(q *psQuery) error {
		rows, err := q.query(ctx, c)
		if err != nil {
			return fmt.Errorf("insert items: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var ri RecordedItem
			var feedID int64
			if err := rows.Scan(&ri.ID, &feedID, &ri.Identity, &ri.IgnoredRule); err != nil {
				return err
			}
			i := idx[feedID]
			outs[i].Items = append(outs[i].Items, ri)
			if ri.IgnoredRule == "" {
				deliver = append(deliver, ri.ID)
			}
		}
		return rows.Err()
	}
	const itemCols = `INSERT INTO items (feed_id, identity, guid, link, title, content, author, published_at, seen_at, ignored_rule) `
	const itemTail = ` ON CONFLICT (feed_id, identity) DO NOTHING RETURNING id, feed_id, identity, ignored_rule`
	if s.Postgres() && len(pending) > 0 {
		n := len(pending)
		feedIDs, idents, guids, lnks, titles, contents, authors, rules :=
			make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		pubs, seens := make([]*time.Time, n), make([]time.Time, n)
		for j, p := range pending {
			r := &recs[p.rec]
			feedIDs[j], idents[j], guids[j], lnks[j], titles[j] = r.FeedID, p.it.Identity, p.it.GUID, p.it.Link, p.it.Title
			contents[j], authors[j], rules[j] = p.it.Content, p.it.Author, p.it.IgnoredRule
			pubs[j], seens[j] = utcPtrOrNil(p.it.PublishedAt), r.logAt(now)
		}
		q := s.psNew().sql(itemCols+`SELECT * FROM unnest(`).arg(feedIDs, "bigint[]").sql(", ").arg(idents, "text[]").sql(", ").
			arg(guids, "text[]").sql(", ").arg(lnks, "text[]").sql(", ").arg(titles, "text[]").sql(", ").
			arg(contents, "text[]").sql(", ").arg(authors, "text[]").sql(", ").arg(pubs, "timestamptz[]").sql(", ").
			arg(seens, "timestamptz[]").sql(", ").arg(rules, "text[]").sql(")" + itemTail)
		if err := insert(q); err != nil {
			return nil, err
		}
		pending = nil
	}
	for start := 0; start < len(pending); start += psChunk {
		part := pending[start:min(start+psChunk, len(pending))]
		q := s.psNew().sql(itemCols + `VALUES `)
		for j, p := range part {
			if j > 0 {
				q.sql(", ")
			}
			r := &recs[p.rec]
			q.sql("(").arg(r.FeedID, "").sql(", ").arg(p.it.Identity, "").sql(", ").arg(p.it.GUID, "").sql(", ").
				arg(p.it.Link, "").sql(", ").arg(p.it.Title, "").sql(", ").arg(p.it.Content, "").sql(", ").
				arg(p.it.Author, "").sql(", ").arg(utcPtrOrNil(p.it.PublishedAt), "").sql(", ").
				arg(r.logAt(now), "").sql(", ").arg(p.it.IgnoredRule, "").sql(")")
		}
		if err := insert(q.sql(itemTail)); err != nil {
			return nil, err
		}
	}

	// 3. Fan-out.
	itemFeed := make(map[int64]int64, len(deliver))
	for i := range outs {
		for _, it := range outs[i].Items {
			itemFeed[it.ID] = recs[i].FeedID
		}
	}
	for start, chunk := 0, s.psChunkOf(len(deliver)); start < len(deliver); start += chunk {
		part := deliver[start:min(start+chunk, len(deliver))]
		q := s.psNew().sql(`INSERT INTO outbox (kind, dedupe_key, user_id, subscription_id, item_id, to_addr, credits, state, last_error, next_attempt_at, created_at)
SELECT 'item', 'item:' || s.id || ':' || i.id, s.user_id, s.id, i.id, u.email, 1,
  CASE WHEN u.bouncing_since IS NULL THEN 'queued' ELSE 'held' END,
  CASE WHEN u.bouncing_since IS NULL THEN '' ELSE `).arg(HoldBouncing, "text").sql(` END, `).
			arg(now, "timestamptz").sql(", ").arg(now, "timestamptz").sql(`
FROM items i
JOIN subscriptions s ON s.feed_id = i.feed_id AND s.state = 'active' AND s.digest_id IS NULL
JOIN users u ON u.id = s.user_id
WHERE i.id`).in(part).sql(`
ON CONFLICT (dedupe_key) DO NOTHING
RETURNING item_id`)
		if err := s.psCountByFeed(ctx, c, q, itemFeed, idx, func(o *PollOutcome) { o.Emails++ }, outs); err != nil {
			return nil, fmt.Errorf("fan out to instant subscribers: %w", err)
		}
		q = s.psNew().sql(`INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, queued_at)
SELECT s.digest_id, s.id, i.id, i.feed_id, `).arg(now, "timestamptz").sql(`
FROM items i
JOIN subscriptions s ON s.feed_id = i.feed_id AND s.state = 'active' AND s.digest_id IS NOT NULL
WHERE i.id`).in(part).sql(`
ON CONFLICT (subscription_id, item_id) DO NOTHING
RETURNING item_id`)
		if err := s.psCountByFeed(ctx, c, q, itemFeed, idx, func(o *PollOutcome) { o.DigestItems++ }, outs); err != nil {
			return nil, fmt.Errorf("fan out to digests: %w", err)
		}
	}

	// 4. Endings and merges.
	for i, r := range recs {
		if outs[i].Lost {
			continue
		}
		if r.End != nil {
			n, err := s.psEndFeed(ctx, r, now)
			if err != nil {
				return nil, err
			}
			outs[i].Notices = n
		}
		if r.MergeInto != 0 && r.MergeInto != r.FeedID {
			n, err := s.psMergeFeed(ctx, c, r.FeedID, r.MergeInto, now)
			if err != nil {
				return nil, err
			}
			outs[i].Moved = n
		}
	}

	// 5. poll_log.
	var logged []int
	for i := range recs {
		if !outs[i].Lost && !recs[i].folded() {
			logged = append(logged, i)
		}
	}
	if err := s.psAppendPollLog(ctx, c, recs, outs, logged, now); err != nil {
		return nil, err
	}

	// 6. The feeds' state, last.
	var polled []int
	for i, r := range recs {
		if outs[i].Lost {
			continue
		}
		if r.Push {
			if err := s.psPushState(ctx, c, r, now); err != nil {
				return nil, err
			}
			continue
		}
		polled = append(polled, i)
	}
	for start, chunk := 0, s.psChunkOf(len(polled)); start < len(polled); start += chunk {
		part := polled[start:min(start+chunk, len(polled))]
		n, err := s.psWriteStates(ctx, c, owner, recs, part, now)
		if err != nil {
			return nil, err
		}
		if n != int64(len(part)) {
			// Cannot happen while the rows are locked (Postgres) or the
			// database is (SQLite); refuse to commit a partial write.
			return nil, fmt.Errorf("write feed state: %d of %d rows updated: %w", n, len(part), ErrLeaseLost)
		}
	}
	return outs, nil
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
		if s.Postgres() {
			q.sql(" ORDER BY id FOR UPDATE")
		}
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
