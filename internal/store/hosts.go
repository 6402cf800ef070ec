package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Host is per-host politeness state shared by every poller process.
type Host struct {
	Host               string `gorm:"primaryKey"`
	MinIntervalSeconds int
	BackoffUntil       *time.Time
	BackoffReason      string
	UpdatedAt          time.Time
	// LeaseOwner holds the host (polls its feeds) until LeaseUntil; see
	// ClaimDueFeeds. Used on Postgres only.
	LeaseOwner string
	LeaseUntil *time.Time
}

// Per-host politeness shared by every process (the hosts table): a back-off
// after a host answered 429 (or 503 with Retry-After), and an operator's
// minimum poll interval for the host. Each poller process also keeps its own
// in-memory limiter; the table is what makes a back-off reach the others.

// HostOf returns the host key of a feed URL: the host name in lower case,
// without port or trailing dot ("" for an unparsable URL). Every feed of a
// host shares its politeness limits whatever the port, as the in-memory
// limiter does.
func HostOf(feedURL string) string {
	u, err := url.Parse(strings.TrimSpace(feedURL))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// Hosts returns the hosts rows for names (missing hosts are absent from the
// map), in one query.
func (s *Store) Hosts(ctx context.Context, names []string) (map[string]Host, error) {
	out := make(map[string]Host, len(names))
	if len(names) == 0 {
		return out, nil
	}
	var rows []Host
	for start := 0; start < len(names); start += psChunk {
		part := names[start:min(start+psChunk, len(names))]
		if err := s.DB.WithContext(ctx).Where("host IN ?", part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("hosts: %w", err)
		}
		for _, h := range rows {
			out[h.Host] = h
		}
	}
	return out, nil
}

// BackOffHost records that host must not be asked anything before until,
// for reason. An existing back-off is only ever lengthened.
func (s *Store) BackOffHost(ctx context.Context, host string, until time.Time, reason string) error {
	now := s.now()
	err := s.DB.WithContext(ctx).Exec(`INSERT INTO hosts (host, min_interval_seconds, backoff_until, backoff_reason, updated_at)
VALUES (?, 0, ?, ?, ?)
ON CONFLICT (host) DO UPDATE SET backoff_until = excluded.backoff_until, backoff_reason = excluded.backoff_reason,
  updated_at = excluded.updated_at
WHERE hosts.backoff_until IS NULL OR hosts.backoff_until < excluded.backoff_until`,
		host, utc(until), reason, now).Error
	if err != nil {
		return fmt.Errorf("back off host %s: %w", host, err)
	}
	return nil
}

// SetHostMinInterval sets the operator's minimum poll interval for every
// feed of host (0 removes it). It applies from each feed's next poll on.
func (s *Store) SetHostMinInterval(ctx context.Context, host string, d time.Duration) error {
	if d < 0 {
		d = 0
	}
	err := s.DB.WithContext(ctx).Exec(`INSERT INTO hosts (host, min_interval_seconds, backoff_reason, updated_at)
VALUES (?, ?, '', ?)
ON CONFLICT (host) DO UPDATE SET min_interval_seconds = excluded.min_interval_seconds, updated_at = excluded.updated_at`,
		host, int64(d/time.Second), s.now()).Error
	if err != nil {
		return fmt.Errorf("set minimum interval of host %s: %w", host, err)
	}
	return nil
}

// Deferral is a claimed feed given back without a poll: due at Next, with
// Reason as its poll reason when not empty.
type Deferral struct {
	ID     int64
	Next   time.Time
	Reason string
}

// DeferFeed gives back owner's lease on feed id without polling it, making
// it due at next with reason (a host back-off, a lease too short to fetch
// in, a shutdown). It reports whether owner still held the lease. A ping
// queued meanwhile (PingFeed) is dropped: the poll at next starts after it.
func (s *Store) DeferFeed(ctx context.Context, id int64, owner string, next time.Time, reason string) (bool, error) {
	n, err := s.DeferFeeds(ctx, owner, []Deferral{{ID: id, Next: next, Reason: reason}})
	return n == 1, err
}

// deferCols are the columns of DeferFeeds' rows.
var deferCols = []psCol{{"id", "bigint"}, {"next_poll_at", "timestamptz"}, {"reason", "text"}}

// DeferFeeds is DeferFeed for many feeds in one statement per chunk (a
// backlog gives back feeds by the hundred); it returns how many of them
// owner still held.
func (s *Store) DeferFeeds(ctx context.Context, owner string, ds []Deferral) (int64, error) {
	var total int64
	for start, chunk := 0, s.psChunkOf(len(ds)); start < len(ds); start += chunk {
		part := ds[start:min(start+chunk, len(ds))]
		now := s.now()
		q := s.psNew()
		s.deferValues(q, part)
		q.sql(`
UPDATE feeds SET lease_owner = '', lease_until = NULL, ping_queued_at = NULL, next_poll_at = v.next_poll_at,
  poll_reason = CASE WHEN v.reason <> '' THEN v.reason ELSE feeds.poll_reason END, updated_at = `).arg(now, "timestamptz").
			sql("\nFROM v WHERE feeds.id = v.id AND ").heldBy(owner, now)
		n, err := q.exec(ctx, s.psConn(ctx))
		total += n
		if err != nil {
			return total, fmt.Errorf("defer %d feeds: %w", len(part), err)
		}
	}
	return total, nil
}

// deferValues appends the "WITH v" of DeferFeeds' rows.
func (s *Store) deferValues(q *psQuery, ds []Deferral) {
	if s.sqlDialect().arrayParams() {
		ids, nexts, reasons := make([]int64, len(ds)), make([]time.Time, len(ds)), make([]string, len(ds))
		for i, d := range ds {
			ids[i], nexts[i], reasons[i] = d.ID, utc(d.Next), d.Reason
		}
		q.psUnnestV(deferCols, []any{ids, nexts, reasons})
		return
	}
	q.sql("WITH v(").names(deferCols).sql(") AS (VALUES ")
	for i, d := range ds {
		if i > 0 {
			q.sql(", ")
		}
		q.sql("(").arg(d.ID, "").sql(", ").arg(utc(d.Next), "").sql(", ").arg(d.Reason, "").sql(")")
	}
	q.sql(")")
}
