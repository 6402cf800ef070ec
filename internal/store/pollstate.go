package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
// Choices where DESIGN.md is silent:
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

// FeedMerged is the state of a feed whose URL moved permanently (301/308) to
// the URL of another feed: its subscriptions were moved there and it is not
// polled again.
const FeedMerged = "merged"

// IgnoredFirstPoll is the ignored_rule of the items recorded by a feed's
// first successful parse: all seen, none mailed.
const IgnoredFirstPoll = "first poll"

// NewItem is an item a poll found that the store did not know (by identity)
// when the poll looked. IgnoredRule non-empty: recorded as seen, never
// delivered.
type NewItem struct {
	Identity    string
	GUID        string
	Link        string
	Title       string
	Content     string
	Author      string
	PublishedAt *time.Time
	IgnoredRule string
}

// FeedState is a feed's state after a poll, written last. Empty Title,
// SiteURL and URL keep the stored value; every other field is written as is
// (the poller starts from the claimed row and changes what the poll changed).
type FeedState struct {
	URL               string // new URL after a permanent redirect; "" keeps it
	Title, SiteURL    string // "" keeps them
	State             string
	NextPollAt        time.Time
	PollReason        string
	ValidatorURL      string
	ETag              string
	LastModified      string
	BodyHash          string
	LastPolledAt      *time.Time
	LastStatus        int
	LastError         string
	LastElapsedMS     int
	LastSuccessAt     *time.Time
	PrimedAt          *time.Time
	LastNewItemAt     *time.Time
	NewestItemDate    *time.Time
	ConsecutiveErrors int
	ErrorsSince       *time.Time
}

// FeedEnd says that this poll ends the feed's service (410 Gone, or
// blacklisting): each active subscriber is told by a free notice, queued
// once per NoticeKey(userID).
type FeedEnd struct {
	// EndSubscriptions ends every subscription of the feed (410) with
	// EndedReason. Blacklisting keeps them: a revived feed resumes.
	EndSubscriptions bool
	EndedReason      string
	NoticeKey        func(userID int64) string
	Notice           func(userID int64) Notice
}

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

// RecordedItem is an item a poll inserted.
type RecordedItem struct {
	ID          int64
	Identity    string
	IgnoredRule string
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

// psConn is the connection (or transaction) a Store runs raw SQL on.
func (s *Store) psConn(ctx context.Context) gorm.ConnPool {
	return s.DB.WithContext(ctx).Statement.ConnPool
}

// psQuery builds one SQL statement with placeholders of the store's dialect
// ($n on Postgres, ? on SQLite). Raw database/sql is used on the hot path:
// gorm's statement building costs more than the database for batches of
// thousands of arguments.
type psQuery struct {
	pg   bool
	b    strings.Builder
	args []any
}

func (s *Store) psNew() *psQuery { return &psQuery{pg: s.Postgres()} }

// sql appends text.
func (q *psQuery) sql(parts ...string) *psQuery {
	for _, p := range parts {
		q.b.WriteString(p)
	}
	return q
}

// arg appends a placeholder for v, cast to pgType on Postgres (untyped
// parameters in VALUES lists and SELECT lists resolve to text there).
func (q *psQuery) arg(v any, pgType string) *psQuery {
	q.args = append(q.args, v)
	if q.pg {
		q.b.WriteString("$")
		q.b.WriteString(strconv.Itoa(len(q.args)))
		if pgType != "" {
			q.b.WriteString("::")
			q.b.WriteString(pgType)
		}
	} else {
		q.b.WriteByte('?')
	}
	return q
}

// ids appends "(a, b, c)".
func (q *psQuery) ids(ids []int64) *psQuery {
	q.b.WriteByte('(')
	for i, id := range ids {
		if i > 0 {
			q.b.WriteString(", ")
		}
		q.arg(id, "bigint")
	}
	q.b.WriteByte(')')
	return q
}

// in appends " IN (a, b, c)" on SQLite and " = ANY($n::bigint[])" on
// Postgres (one parameter, one statement text whatever the count, so the
// prepared statement is reused).
func (q *psQuery) in(ids []int64) *psQuery {
	if q.pg {
		q.sql(" = ANY(")
		q.arg(ids, "bigint[]")
		return q.sql(")")
	}
	q.sql(" IN ")
	return q.ids(ids)
}

func (q *psQuery) String() string { return q.b.String() }

func (q *psQuery) exec(ctx context.Context, c gorm.ConnPool) (int64, error) {
	res, err := c.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q *psQuery) query(ctx context.Context, c gorm.ConnPool) (*sql.Rows, error) {
	return c.QueryContext(ctx, q.String(), q.args...)
}

// psChunk is how many rows go into one multi-row statement: well under the
// parameter limits of both databases (Postgres 65535, SQLite 32766) for the
// widest statement here (~21 columns).
const psChunk = 500

// psChunkOf is the chunk size for statements over many rows: psChunk on
// SQLite; on Postgres, where arrays carry the rows in a few parameters,
// everything at once.
func (s *Store) psChunkOf(n int) int {
	if s.Postgres() {
		return max(n, 1)
	}
	return psChunk
}

// recordPollsTx writes recs inside the caller's transaction. On Postgres the
// quiet records (see quiet) are written first by one statement, and the
// others by recordPollsSteps.
func (s *Store) recordPollsTx(ctx context.Context, owner string, recs []PollRecord) ([]PollOutcome, error) {
	if !s.Postgres() {
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
// end: no items, no ending, no merge, not pushed content. Most polls are (a
// 304, an unchanged body, an error), and on Postgres they take the single
// statement of psWriteQuiet.
func (r *PollRecord) quiet() bool {
	return !r.Push && len(r.Items) == 0 && r.End == nil && (r.MergeInto == 0 || r.MergeInto == r.FeedID)
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

// psCountByFeed runs a fan-out INSERT … RETURNING item_id and counts the
// rows per record.
func (s *Store) psCountByFeed(ctx context.Context, c gorm.ConnPool, q *psQuery, itemFeed map[int64]int64,
	idx map[int64]int, add func(*PollOutcome), outs []PollOutcome) error {
	rows, err := q.query(ctx, c)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var itemID int64
		if err := rows.Scan(&itemID); err != nil {
			return err
		}
		if i, ok := idx[itemFeed[itemID]]; ok {
			add(&outs[i])
		}
	}
	return rows.Err()
}

// psCol is a column of a VALUES or unnest list, with its Postgres type.
type psCol struct{ name, pgType string }

// psStateCols are the feed columns a poll writes, in the order of the
// VALUES rows of psWriteStates, with their Postgres types.
var psStateCols = []psCol{
	{"id", "bigint"}, {"url", "text"}, {"host", "text"}, {"title", "text"}, {"site_url", "text"}, {"state", "text"},
	{"next_poll_at", "timestamptz"}, {"poll_reason", "text"}, {"validator_url", "text"}, {"etag", "text"},
	{"last_modified", "text"}, {"body_hash", "text"}, {"last_polled_at", "timestamptz"}, {"last_status", "integer"},
	{"last_error", "text"}, {"last_elapsed_ms", "integer"}, {"last_success_at", "timestamptz"},
	{"primed_at", "timestamptz"}, {"last_new_item_at", "timestamptz"}, {"newest_item_date", "timestamptz"},
	{"consecutive_errors", "integer"}, {"errors_since", "timestamptz"}, {"fold", "boolean"},
}

func psStateVals(r *PollRecord) []any {
	st := &r.State
	return []any{r.FeedID, st.URL, st.host(), st.Title, st.SiteURL, st.State,
		utc(st.NextPollAt), st.PollReason, st.ValidatorURL, st.ETag,
		st.LastModified, st.BodyHash, utcPtrOrNil(st.LastPolledAt), st.LastStatus,
		st.LastError, st.LastElapsedMS, utcPtrOrNil(st.LastSuccessAt),
		utcPtrOrNil(st.PrimedAt), utcPtrOrNil(st.LastNewItemAt), utcPtrOrNil(st.NewestItemDate),
		st.ConsecutiveErrors, utcPtrOrNil(st.ErrorsSince), r.folded()}
}

// host is the host key of a state's new URL ("" when the URL stays).
func (st *FeedState) host() string {
	if st.URL == "" {
		return ""
	}
	return HostOf(st.URL)
}

// psStateSet is the SET list that writes a poll's state from the row v
// (columns psStateCols), counts the poll in log_seq (and, unless it is
// folded, its line in logged_at) and clears the lease.
const psStateSet = `
  url = COALESCE(NULLIF(v.url, ''), feeds.url),
  host = CASE WHEN v.url <> '' THEN v.host ELSE feeds.host END,
  title = COALESCE(NULLIF(v.title, ''), feeds.title),
  site_url = COALESCE(NULLIF(v.site_url, ''), feeds.site_url),
  state = v.state, next_poll_at = v.next_poll_at, poll_reason = v.poll_reason,
  validator_url = v.validator_url, etag = v.etag, last_modified = v.last_modified, body_hash = v.body_hash,
  last_polled_at = v.last_polled_at, last_status = v.last_status, last_error = v.last_error,
  last_elapsed_ms = v.last_elapsed_ms, last_success_at = v.last_success_at, primed_at = v.primed_at,
  last_new_item_at = v.last_new_item_at, newest_item_date = v.newest_item_date,
  consecutive_errors = v.consecutive_errors, errors_since = v.errors_since,
  log_seq = feeds.log_seq + 1, logged_at = CASE WHEN v.fold THEN feeds.logged_at ELSE v.last_polled_at END,
  lease_owner = '', lease_until = NULL`

// psWriteStates writes the state of recs[part...] with one UPDATE … FROM a
// VALUES list, guarded by heldBy, clearing the leases.
func (s *Store) psWriteStates(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, part []int, now time.Time) (int64, error) {
	q := s.psNew()
	if s.Postgres() {
		sa := newPSStateArrays(len(part))
		for _, i := range part {
			sa.add(&recs[i])
		}
		q.psUnnestV(psStateCols, sa.arrays())
	} else {
		q.sql("WITH v(").names(psStateCols).sql(") AS (VALUES ")
		for j, i := range part {
			if j > 0 {
				q.sql(", ")
			}
			q.sql("(")
			for k, v := range psStateVals(&recs[i]) {
				if k > 0 {
					q.sql(", ")
				}
				q.arg(v, "")
			}
			q.sql(")")
		}
		q.sql(")")
	}
	q.sql("\nUPDATE feeds SET "+psStateSet+", updated_at = ").arg(now, "timestamptz").
		sql("\nFROM v WHERE feeds.id = v.id AND ").heldBy(owner, now)
	n, err := q.exec(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("write feed state: %w", err)
	}
	return n, nil
}

// psUnnestV appends "WITH v AS (SELECT * FROM unnest($1::t1[], …) AS v(c1,
// …))": one array parameter per column (arrays[k] holds column cols[k]),
// so the statement text is the same for every batch size and Postgres
// plans it once per connection.
func (q *psQuery) psUnnestV(cols []psCol, arrays []any) {
	q.sql("WITH v AS (SELECT * FROM unnest(")
	for k, col := range cols {
		if k > 0 {
			q.sql(", ")
		}
		q.arg(arrays[k], col.pgType+"[]")
	}
	q.sql(") AS v(").names(cols).sql("))")
}

// names appends the names of cols, separated by commas.
func (q *psQuery) names(cols []psCol) *psQuery {
	for k, col := range cols {
		if k > 0 {
			q.sql(", ")
		}
		q.sql(col.name)
	}
	return q
}

// psStateArrays holds the state columns of many records as typed slices,
// which pgx sends as Postgres arrays without boxing every value. (pgx sends
// time.Time as an instant, so no UTC conversion is needed here.)
type psStateArrays struct {
	ids                                                  []int64
	urls, hosts, titles, siteURLs, states                []string
	next                                                 []time.Time
	reasons, validatorURLs, etags, lastModifieds, hashes []string
	polled                                               []*time.Time
	statuses                                             []int32
	errTexts                                             []string
	elapsed                                              []int32
	success, primed, lastNew, newest                     []*time.Time
	errCounts                                            []int32
	errSince                                             []*time.Time
	folds                                                []bool
}

// newPSStateArrays makes the slices for n records at once.
func newPSStateArrays(n int) *psStateArrays {
	strs := func() []string { return make([]string, 0, n) }
	times := func() []*time.Time { return make([]*time.Time, 0, n) }
	ints := func() []int32 { return make([]int32, 0, n) }
	return &psStateArrays{
		ids: make([]int64, 0, n), urls: strs(), hosts: strs(), titles: strs(), siteURLs: strs(), states: strs(),
		next: make([]time.Time, 0, n), reasons: strs(), validatorURLs: strs(), etags: strs(), lastModifieds: strs(),
		hashes: strs(), polled: times(), statuses: ints(), errTexts: strs(), elapsed: ints(), success: times(),
		primed: times(), lastNew: times(), newest: times(), errCounts: ints(), errSince: times(),
		folds: make([]bool, 0, n),
	}
}

func (a *psStateArrays) add(r *PollRecord) {
	st := &r.State
	a.ids = append(a.ids, r.FeedID)
	a.urls, a.hosts = append(a.urls, st.URL), append(a.hosts, st.host())
	a.titles, a.siteURLs, a.states = append(a.titles, st.Title), append(a.siteURLs, st.SiteURL), append(a.states, st.State)
	a.next = append(a.next, st.NextPollAt)
	a.reasons, a.validatorURLs, a.etags = append(a.reasons, st.PollReason), append(a.validatorURLs, st.ValidatorURL), append(a.etags, st.ETag)
	a.lastModifieds, a.hashes = append(a.lastModifieds, st.LastModified), append(a.hashes, st.BodyHash)
	a.polled, a.statuses, a.errTexts = append(a.polled, st.LastPolledAt), append(a.statuses, int32(st.LastStatus)), append(a.errTexts, st.LastError)
	a.elapsed, a.success, a.primed = append(a.elapsed, int32(st.LastElapsedMS)), append(a.success, st.LastSuccessAt), append(a.primed, st.PrimedAt)
	a.lastNew, a.newest = append(a.lastNew, st.LastNewItemAt), append(a.newest, st.NewestItemDate)
	a.errCounts, a.errSince = append(a.errCounts, int32(st.ConsecutiveErrors)), append(a.errSince, st.ErrorsSince)
	a.folds = append(a.folds, r.folded())
}

// arrays returns the slices in the order of psStateCols.
func (a *psStateArrays) arrays() []any {
	return []any{a.ids, a.urls, a.hosts, a.titles, a.siteURLs, a.states, a.next, a.reasons, a.validatorURLs, a.etags,
		a.lastModifieds, a.hashes, a.polled, a.statuses, a.errTexts, a.elapsed, a.success, a.primed, a.lastNew,
		a.newest, a.errCounts, a.errSince, a.folds}
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
	q.sql(",\nu AS (UPDATE feeds SET "+psStateSet+", updated_at = ").arg(now, "timestamptz").
		sql("\n  FROM v WHERE feeds.id = v.id AND ").heldBy(owner, now).sql(` RETURNING feeds.id, feeds.log_seq),
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
	{"last_elapsed_ms", "integer"}, {"last_success_at", "timestamptz"},
}

// psWriteFolded writes the folded records recs[part...] (no poll_log line)
// with one UPDATE that carries only psFoldCols: a repeated 304 changes
// nothing else, and sending and unpacking the 31 columns of a full quiet
// write was a third of the cost of a warm poll's write. It adds the ids of
// the feeds written to held.
func (s *Store) psWriteFolded(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, part []int, now time.Time, held map[int64]bool) error {
	n := len(part)
	ids, next, polled, success := make([]int64, 0, n), make([]time.Time, 0, n), make([]*time.Time, 0, n), make([]*time.Time, 0, n)
	reasons, vurls, etags, lms := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	elapsed := make([]int32, 0, n)
	for _, i := range part {
		r := &recs[i]
		st := &r.State
		ids, next, reasons = append(ids, r.FeedID), append(next, st.NextPollAt), append(reasons, st.PollReason)
		vurls, etags, lms = append(vurls, st.ValidatorURL), append(etags, st.ETag), append(lms, st.LastModified)
		polled, elapsed, success = append(polled, st.LastPolledAt), append(elapsed, int32(st.LastElapsedMS)), append(success, st.LastSuccessAt)
	}
	q := s.psNew()
	q.psUnnestV(psFoldCols, []any{ids, next, reasons, vurls, etags, lms, polled, elapsed, success})
	q.sql(`
UPDATE feeds SET next_poll_at = v.next_poll_at, poll_reason = v.poll_reason, validator_url = v.validator_url,
  etag = v.etag, last_modified = v.last_modified, last_polled_at = v.last_polled_at,
  last_elapsed_ms = v.last_elapsed_ms, last_success_at = v.last_success_at,
  log_seq = feeds.log_seq + 1, lease_owner = '', lease_until = NULL, updated_at = `).arg(now, "timestamptz").
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

// psPushState writes what pushed content may change.
func (s *Store) psPushState(ctx context.Context, c gorm.ConnPool, r PollRecord, now time.Time) error {
	st := &r.State
	nd := utcPtrOrNil(st.NewestItemDate)
	q := s.psNew().sql(`UPDATE feeds SET
  title = COALESCE(NULLIF(`).arg(st.Title, "text").sql(`, ''), title),
  site_url = COALESCE(NULLIF(`).arg(st.SiteURL, "text").sql(`, ''), site_url),
  primed_at = COALESCE(primed_at, `).arg(utcPtrOrNil(st.PrimedAt), "timestamptz").sql(`),
  last_new_item_at = COALESCE(`).arg(utcPtrOrNil(st.LastNewItemAt), "timestamptz").sql(`, last_new_item_at),
  newest_item_date = CASE WHEN newest_item_date IS NULL OR newest_item_date < `).arg(nd, "timestamptz").
		sql(` THEN COALESCE(`).arg(nd, "timestamptz").sql(`, newest_item_date) ELSE newest_item_date END,
  log_seq = log_seq + 1, logged_at = NULL,
  updated_at = `).arg(now, "timestamptz").sql(` WHERE id = `).arg(r.FeedID, "bigint")
	if _, err := q.exec(ctx, c); err != nil {
		return fmt.Errorf("write pushed feed state: %w", err)
	}
	return nil
}

// psEndFeed ends a feed's service: subscriptions ended (410) and a notice
// queued for each active subscriber. It returns how many notices were queued.
func (s *Store) psEndFeed(ctx context.Context, r PollRecord, now time.Time) (int, error) {
	var users []int64
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("feed_id = ? AND state = ?", r.FeedID, SubActive).
		Order("user_id").Distinct().Pluck("user_id", &users).Error; err != nil {
		return 0, fmt.Errorf("subscribers of feed %d: %w", r.FeedID, err)
	}
	if r.End.EndSubscriptions {
		if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("feed_id = ? AND state <> ?", r.FeedID, SubEnded).
			Updates(map[string]any{"state": SubEnded, "ended_at": now, "ended_reason": r.End.EndedReason}).Error; err != nil {
			return 0, fmt.Errorf("end subscriptions of feed %d: %w", r.FeedID, err)
		}
		if err := s.recountSubscribers(r.FeedID); err != nil {
			return 0, err
		}
	}
	n := 0
	if r.End.Notice == nil || r.End.NoticeKey == nil {
		return 0, nil
	}
	for _, u := range users {
		ok, err := s.QueueNotice(ctx, u, r.End.NoticeKey(u), r.End.Notice(u))
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// psMergeFeed moves feed from's subscriptions and item identities to feed
// into and makes into due now. It returns how many subscriptions moved.
func (s *Store) psMergeFeed(ctx context.Context, c gorm.ConnPool, from, into int64, now time.Time) (int64, error) {
	q := s.psNew().sql(`INSERT INTO items (feed_id, identity, guid, link, title, content, author, published_at, seen_at, ignored_rule)
SELECT `).arg(into, "bigint").sql(`, identity, guid, link, title, content, author, published_at, `).arg(now, "timestamptz").
		sql(`, `).arg("merged from feed "+strconv.FormatInt(from, 10), "text").sql(`
FROM items WHERE feed_id = `).arg(from, "bigint").sql(` ON CONFLICT (feed_id, identity) DO NOTHING`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: copy items: %w", from, into, err)
	}
	q = s.psNew().sql(`UPDATE subscriptions SET feed_id = `).arg(into, "bigint").sql(`
WHERE feed_id = `).arg(from, "bigint").sql(` AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = `).arg(into, "bigint").sql(`)`)
	moved, err := q.exec(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: move subscriptions: %w", from, into, err)
	}
	q = s.psNew().sql(`UPDATE subscriptions SET state = 'ended', ended_at = `).arg(now, "timestamptz").
		sql(`, ended_reason = `).arg("feed moved to feed "+strconv.FormatInt(into, 10)+", already followed there", "text").
		sql(` WHERE feed_id = `).arg(from, "bigint").sql(` AND state <> 'ended'`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: end duplicates: %w", from, into, err)
	}
	if err := s.recountSubscribers(from); err != nil {
		return 0, err
	}
	if err := s.recountSubscribers(into); err != nil {
		return 0, err
	}
	q = s.psNew().sql(`UPDATE feeds SET next_poll_at = `).arg(now, "timestamptz").sql(`, poll_reason = `).
		arg("feed "+strconv.FormatInt(from, 10)+" moved here (permanent redirect): poll now", "text").
		sql(` WHERE id = `).arg(into, "bigint").sql(` AND state = 'active' AND next_poll_at > `).arg(now, "timestamptz").
		sql(` AND (lease_until IS NULL OR lease_until <= `).arg(now, "timestamptz").sql(`)`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: make due: %w", from, into, err)
	}
	return moved, nil
}

// KnownIdentities returns which of identities feedID has already recorded,
// in one query.
func (s *Store) KnownIdentities(ctx context.Context, feedID int64, identities []string) (map[string]bool, error) {
	known := make(map[string]bool)
	c := s.psConn(ctx)
	for start, chunk := 0, s.psChunkOf(len(identities)); start < len(identities); start += chunk {
		part := identities[start:min(start+chunk, len(identities))]
		q := s.psNew().sql("SELECT identity FROM items WHERE feed_id = ").arg(feedID, "bigint")
		if s.Postgres() {
			q.sql(" AND identity = ANY(").arg(part, "text[]").sql(")")
		} else {
			q.sql(" AND identity IN (")
			for j, id := range part {
				if j > 0 {
					q.sql(", ")
				}
				q.arg(id, "")
			}
			q.sql(")")
		}
		rows, err := q.query(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("known items of feed %d: %w", feedID, err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return known, nil
}

// NextPollDue returns when the next feed the poller claims (active, followed)
// becomes claimable by owner: its next_poll_at, or the end of its lease when
// a poll in progress holds it, or on Postgres the end of its host's lease
// when another owner holds the host (see ClaimDueFeeds). ok is false when
// there are none. It looks at the nextPollDueScan feeds due first, so when
// more of those than that are held the answer can be later than the true
// one; Run sleeps at most Config.IdleWait whatever it says.
func (s *Store) NextPollDue(ctx context.Context, owner string) (t time.Time, ok bool, err error) {
	type due struct {
		NextPollAt             time.Time
		LeaseUntil, HostLeased *time.Time
	}
	var out []due
	db := s.DB.WithContext(ctx)
	if s.Postgres() {
		err = db.Raw(`SELECT f.next_poll_at, f.lease_until,
  CASE WHEN h.lease_owner <> ? THEN h.lease_until END AS host_leased
FROM feeds f LEFT JOIN hosts h ON h.host = f.host
WHERE f.state = ? AND f.subscriber_count > 0 ORDER BY f.next_poll_at LIMIT ?`, owner, FeedActive, nextPollDueScan).Scan(&out).Error
	} else {
		err = db.Model(&Feed{}).Select("next_poll_at", "lease_until").
			Where("state = ? AND subscriber_count > 0", FeedActive).Order("next_poll_at").Limit(nextPollDueScan).Scan(&out).Error
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next poll due: %w", err)
	}
	for i, d := range out {
		at := d.NextPollAt
		for _, l := range []*time.Time{d.LeaseUntil, d.HostLeased} {
			if l != nil && l.After(at) {
				at = *l
			}
		}
		if i == 0 || at.Before(t) {
			t = at
		}
	}
	return t, len(out) > 0, nil
}

// nextPollDueScan is how many of the first-due feeds NextPollDue looks at.
const nextPollDueScan = 64

// PrunePollLog deletes poll_log rows older than before, and returns how
// many went.
func (s *Store) PrunePollLog(ctx context.Context, before time.Time) (int64, error) {
	res := s.DB.WithContext(ctx).Exec("DELETE FROM poll_log WHERE polled_at < ?", utc(before))
	if res.Error != nil {
		return 0, fmt.Errorf("prune poll log: %w", res.Error)
	}
	return res.RowsAffected, nil
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
	if s.Postgres() {
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
