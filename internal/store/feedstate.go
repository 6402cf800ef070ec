package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

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

// psStateCols are the feed columns a poll writes, in the order of the
// VALUES rows of psWriteStates, with their Postgres types.
var psStateCols = []psCol{
	{"id", "bigint"}, {"url", "text"}, {"host", "text"}, {"title", "text"}, {"site_url", "text"}, {"state", "text"},
	{"next_poll_at", "timestamptz"}, {"poll_reason", "text"}, {"validator_url", "text"}, {"etag", "text"},
	{"last_modified", "text"}, {"body_hash", "text"}, {"last_polled_at", "timestamptz"}, {"last_status", "integer"},
	{"last_error", "text"}, {"last_elapsed_ms", "integer"}, {"last_success_at", "timestamptz"},
	{"primed_at", "timestamptz"}, {"last_new_item_at", "timestamptz"}, {"newest_item_date", "timestamptz"},
	{"consecutive_errors", "integer"}, {"errors_since", "timestamptz"}, {"fold", "boolean"},
	{"fetched_at", "timestamptz"},
}

func psStateVals(r *PollRecord) []any {
	st := &r.State
	return []any{r.FeedID, st.URL, st.host(), st.Title, st.SiteURL, st.State,
		utc(st.NextPollAt), st.PollReason, st.ValidatorURL, st.ETag,
		st.LastModified, st.BodyHash, utcPtrOrNil(st.LastPolledAt), st.LastStatus,
		st.LastError, st.LastElapsedMS, utcPtrOrNil(st.LastSuccessAt),
		utcPtrOrNil(st.PrimedAt), utcPtrOrNil(st.LastNewItemAt), utcPtrOrNil(st.NewestItemDate),
		st.ConsecutiveErrors, utcPtrOrNil(st.ErrorsSince), r.folded(), utc(r.FetchedAt)}
}

// host is the host key of a state's new URL ("" when the URL stays).
func (st *FeedState) host() string {
	if st.URL == "" {
		return ""
	}
	return HostOf(st.URL)
}

// psStateSet appends the SET list that writes a poll's state from the row
// v (columns psStateCols), counts the poll in log_seq (and, unless it is
// folded, its line in logged_at), clears the lease and takes up a queued
// ping (psQueuedPing), then ", updated_at = now".
func psStateSet(q *psQuery, now time.Time) *psQuery {
	q.sql(`
  url = COALESCE(NULLIF(v.url, ''), feeds.url),
  host = CASE WHEN v.url <> '' THEN v.host ELSE feeds.host END,
  title = COALESCE(NULLIF(v.title, ''), feeds.title),
  site_url = COALESCE(NULLIF(v.site_url, ''), feeds.site_url),
  state = v.state,
  validator_url = v.validator_url, etag = v.etag, last_modified = v.last_modified, body_hash = v.body_hash,
  last_polled_at = v.last_polled_at, last_status = v.last_status, last_error = v.last_error,
  last_elapsed_ms = v.last_elapsed_ms, last_success_at = v.last_success_at, primed_at = v.primed_at,
  last_new_item_at = v.last_new_item_at, newest_item_date = v.newest_item_date,
  consecutive_errors = v.consecutive_errors, errors_since = v.errors_since,
  log_seq = feeds.log_seq + 1, logged_at = CASE WHEN v.fold THEN feeds.logged_at ELSE v.last_polled_at END,
  lease_owner = '', lease_until = NULL,`)
	return psQueuedPing(q, "v.state", now).sql(", updated_at = ").arg(now, "timestamptz")
}

// PingRepollReason is the poll reason of a feed made due again because a
// publisher pinged it while it was being polled (see PingFeed).
const PingRepollReason = "publisher ping during the previous poll: poll again now"

// psQueuedPing appends the SET items next_poll_at, poll_reason and
// ping_queued_at of a poll's write from the row v (v.next_poll_at,
// v.poll_reason, v.fetched_at; state is the SQL of the feed's new state): a
// ping queued while the poll was in progress, at or after its request went
// out (PingFeed), makes a feed that stays active due at now, the one more
// conditional poll the publisher asked for; an older one was answered by
// this poll. Either way the queue is emptied. The SET expressions read the
// row as it was before the UPDATE, so a ping that committed first is seen.
func psQueuedPing(q *psQuery, state string, now time.Time) *psQuery {
	q.sql(`
  next_poll_at = CASE WHEN `)
	psRepoll(q, state, now)
	q.sql(" THEN ").arg(now, "timestamptz").sql(` ELSE v.next_poll_at END,
  poll_reason = CASE WHEN `)
	psRepoll(q, state, now)
	q.sql(" THEN ").arg(PingRepollReason, "text").sql(` ELSE v.poll_reason END,
  ping_queued_at = NULL`)
	return q
}

// psRepoll appends the condition under which a poll's write takes up a
// queued ping (see psQueuedPing).
func psRepoll(q *psQuery, state string, now time.Time) {
	q.sql("feeds.ping_queued_at IS NOT NULL AND feeds.ping_queued_at >= v.fetched_at AND "+state+
		" = 'active' AND v.next_poll_at > ").arg(now, "timestamptz")
}

// psWriteStates writes the state of recs[part...] with one UPDATE … FROM a
// VALUES list, guarded by heldBy, clearing the leases.
func (s *Store) psWriteStates(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, part []int, now time.Time) (int64, error) {
	q := s.psNew()
	rows := make([]*PollRecord, len(part))
	for j, i := range part {
		rows[j] = &recs[i]
	}
	s.psStateValues(q, rows)
	q.sql("\nUPDATE feeds SET ")
	psStateSet(q, now).sql("\nFROM v WHERE feeds.id = v.id AND ").heldBy(owner, now)
	n, err := q.exec(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("write feed state: %w", err)
	}
	return n, nil
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
	fetched                                              []time.Time
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
		folds: make([]bool, 0, n), fetched: make([]time.Time, 0, n),
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
	a.folds, a.fetched = append(a.folds, r.folded()), append(a.fetched, r.FetchedAt)
}

// arrays returns the slices in the order of psStateCols.
func (a *psStateArrays) arrays() []any {
	return []any{a.ids, a.urls, a.hosts, a.titles, a.siteURLs, a.states, a.next, a.reasons, a.validatorURLs, a.etags,
		a.lastModifieds, a.hashes, a.polled, a.statuses, a.errTexts, a.elapsed, a.success, a.primed, a.lastNew,
		a.newest, a.errCounts, a.errSince, a.folds, a.fetched}
}

// writePolledStates is step 6, last, of a poll's write: the new state of
// each record written, pushed content in multi-row UPDATEs (psPushStates),
// polls in multi-row UPDATEs guarded by heldBy that also clear the leases.
func (s *Store) writePolledStates(ctx context.Context, c gorm.ConnPool, owner string, recs []PollRecord, outs []PollOutcome, now time.Time) error {
	var polled, pushed []int
	for i, r := range recs {
		switch {
		case outs[i].Lost:
		case r.Push:
			pushed = append(pushed, i)
		default:
			polled = append(polled, i)
		}
	}
	if err := s.psPushStates(ctx, c, recs, pushed, now); err != nil {
		return err
	}
	for start, chunk := 0, s.psChunkOf(len(polled)); start < len(polled); start += chunk {
		part := polled[start:min(start+chunk, len(polled))]
		n, err := s.psWriteStates(ctx, c, owner, recs, part, now)
		if err != nil {
			return err
		}
		if n != int64(len(part)) {
			// Cannot happen while the rows are locked (Postgres) or the
			// database is (SQLite); refuse to commit a partial write.
			return fmt.Errorf("write feed state: %d of %d rows updated: %w", n, len(part), ErrLeaseLost)
		}
	}
	return nil
}

// psStateValues appends the rows recs as the source v (columns
// psStateCols) of a state UPDATE: unnest of arrays where the dialect
// takes array parameters, a VALUES list otherwise.
func (s *Store) psStateValues(q *psQuery, recs []*PollRecord) {
	if s.sqlDialect().arrayParams() {
		sa := newPSStateArrays(len(recs))
		for _, r := range recs {
			sa.add(r)
		}
		q.psUnnestV(psStateCols, sa.arrays())
		return
	}
	q.sql("WITH v(").names(psStateCols).sql(") AS (VALUES ")
	for j, r := range recs {
		if j > 0 {
			q.sql(", ")
		}
		q.sql("(")
		for k, v := range psStateVals(r) {
			if k > 0 {
				q.sql(", ")
			}
			q.arg(v, "")
		}
		q.sql(")")
	}
	q.sql(")")
}
