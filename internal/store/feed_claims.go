package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Claims of feeds: each due feed is handed to exactly one worker for a
// while (its lease), without moving next_poll_at. On SQLite (one process)
// a claim writes lease_owner and lease_until; on Postgres (several
// processes) feeds are claimed through their hosts and a claim writes no
// feed row (see ClaimDueFeeds). Either way the holder writes its result
// guarded by heldBy, so a holder that lost its lease cannot overwrite the
// newer owner's work.

// ClaimDueFeeds hands out up to limit followed, active feeds due at now
// that nobody holds, oldest first, for lease, leaving next_poll_at as it
// is. held lists the feeds owner holds already (not handed out again);
// after, when not zero, skips feeds due before it (the pass's previous
// claim reached there). On SQLite each feed is leased. On Postgres the
// hosts of the oldest due feeds are leased (free or owner's, in name
// order, so claimers cannot deadlock) and their due feeds returned as if
// leased, with hosts holding every host row leased; so one process at a
// time polls a host. The caller gives hosts back with ReleaseHosts when
// its pass is over.
func (s *Store) ClaimDueFeeds(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int, held []int64, after time.Time) (feeds []Feed, hosts []Host, err error) {
	until := utc(now.Add(lease))
	if !s.sqlDialect().hostLeases() {
		feeds, err := s.leaseDueFeeds(ctx, owner, until, now, limit, after)
		return feeds, nil, err
	}
	if held == nil {
		held = []int64{}
	}
	// The held feeds are the oldest due ones, so both statements' scans of
	// the due index pass over each of them: "NOT IN (SELECT unnest(…))" is
	// one hash probe per row where "<> ALL(…)" compares with every held id
	// (a prepared statement's array parameter is not hashed).
	c := s.psConn(ctx)
	hosts, prev, reach, err := pgLeaseDueHosts(ctx, c, owner, until, now, limit, held, after)
	if err != nil || len(hosts) == 0 {
		return nil, nil, err
	}
	s.reportTakeover(TakeoverHosts, owner, now, prev)
	out, err := pgDueFeedsOfHosts(ctx, c, hosts, now, held, limit, after, reach)
	if err != nil {
		return nil, hosts, err
	}
	for i := range out {
		out[i].LeaseOwner, out[i].LeaseUntil = owner, &until
	}
	return out, hosts, nil
}

// leaseDueFeeds is ClaimDueFeeds on SQLite: each claimed feed is leased.
func (s *Store) leaseDueFeeds(ctx context.Context, owner string, until, now time.Time, limit int, after time.Time) ([]Feed, error) {
	var out []Feed
	prev, err := s.claimPicked(ctx, `SELECT id, lease_owner, lease_until FROM feeds
  WHERE `+polledSQL("")+` AND next_poll_at <= ? AND next_poll_at >= ?
    AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_poll_at LIMIT ?`, []any{utc(now), utc(after), utc(now), limit},
		`UPDATE feeds SET lease_owner = ?, lease_until = ?`, []any{owner, until}, &out)
	if err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	s.reportTakeover(TakeoverFeeds, owner, now, prev)
	return out, nil
}

// pgLeaseDueHosts is the first step of a Postgres claim: it leases the
// hosts of the limit oldest due feeds, those free or owner's, and returns
// their rows, the leases they carried before (read with the due feeds, for
// takeover.go) and reach, the last next_poll_at of that window. reach
// bounds the second step, so that every feed it passes over, older than
// the newest it returns, is one whose host another owner holds (see after).
func pgLeaseDueHosts(ctx context.Context, c gorm.ConnPool, owner string, until, now time.Time, limit int, held []int64, after time.Time) ([]Host, []prevLease, time.Time, error) {
	var reach time.Time
	rows, err := c.QueryContext(ctx, `WITH d AS MATERIALIZED (
  SELECT f.host, f.next_poll_at, h.lease_owner AS prev_owner, h.lease_until AS prev_until
  FROM feeds f LEFT JOIN hosts h ON h.host = f.host
  WHERE `+polledSQL("f")+` AND f.next_poll_at <= $3 AND f.next_poll_at >= $6
    AND (f.lease_until IS NULL OR f.lease_until <= $3)
    AND (h.lease_until IS NULL OR h.lease_until <= $3 OR h.lease_owner = $1)
    AND f.id NOT IN (SELECT unnest($5::bigint[]))
  ORDER BY f.next_poll_at LIMIT $4),
up AS (INSERT INTO hosts (host, lease_owner, lease_until, updated_at)
  SELECT DISTINCT host, $1, $2::timestamptz, $3::timestamptz FROM d ORDER BY host
  ON CONFLICT (host) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
  WHERE hosts.lease_until IS NULL OR hosts.lease_until <= $3 OR hosts.lease_owner = EXCLUDED.lease_owner
  RETURNING host, min_interval_seconds, backoff_until, backoff_reason, updated_at, lease_owner, lease_until)
SELECT up.*, (SELECT max(next_poll_at) FROM d), p.prev_owner, p.prev_until
FROM up LEFT JOIN (SELECT DISTINCT ON (host) host, prev_owner, prev_until FROM d) p ON p.host = up.host
ORDER BY up.host`,
		owner, until, utc(now), limit, held, utc(after))
	if err != nil {
		return nil, nil, reach, fmt.Errorf("claim due feeds: lease hosts: %w", err)
	}
	defer rows.Close()
	var hosts []Host
	var prev []prevLease
	for rows.Next() {
		var h Host
		var p prevLease
		var prevOwner *string
		if err := rows.Scan(&h.Host, &h.MinIntervalSeconds, &h.BackoffUntil, &h.BackoffReason, &h.UpdatedAt,
			&h.LeaseOwner, &h.LeaseUntil, &reach, &prevOwner, &p.Until); err != nil {
			return nil, nil, reach, fmt.Errorf("claim due feeds: lease hosts: %w", err)
		}
		if prevOwner != nil {
			p.Owner = *prevOwner
		}
		hosts, prev = append(hosts, h), append(prev, p)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, reach, fmt.Errorf("claim due feeds: lease hosts: %w", err)
	}
	return hosts, prev, reach, nil
}

// pgDueFeedsOfHosts is the second step of a Postgres claim: the due feeds
// of the hosts just leased, read by a statement of its own so that its
// snapshot, taken after the leases, sees everything a previous holder of
// these hosts wrote before giving them up (in the first step's snapshot a
// feed that holder polled, wrote and released in between would look due
// still, and be fetched twice). The columns are scanned by hand (scanFeeds)
// rather than by gorm's reflection.
func pgDueFeedsOfHosts(ctx context.Context, c gorm.ConnPool, hosts []Host, now time.Time, held []int64, limit int, after, reach time.Time) ([]Feed, error) {
	rows, err := c.QueryContext(ctx, `SELECT `+feedColumns+` FROM feeds
WHERE host = ANY($1::text[]) AND `+polledSQL("")+`
  AND next_poll_at <= $2 AND next_poll_at >= $5 AND next_poll_at <= $6
  AND (lease_until IS NULL OR lease_until <= $2) AND id NOT IN (SELECT unnest($3::bigint[]))
ORDER BY next_poll_at LIMIT $4`, hostNames(hosts), utc(now), held, limit, utc(after), utc(reach))
	if err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	out, err := scanFeeds(rows, limit)
	if err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	return out, nil
}

// hostNames returns the names of hosts.
func hostNames(hosts []Host) []string {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Host
	}
	return names
}

// heldBy appends the condition under which owner holds the row "feeds" (see
// ClaimDueFeeds): its own lease on the feed, or on Postgres the lease on the
// feed's host while no other owner holds an unexpired lease on the feed.
// A host lease that ran out still counts while nobody has taken it over: then
// nobody else can have polled the feed.
func (q *psQuery) heldBy(owner string, now time.Time) *psQuery {
	if !q.d.hostLeases() {
		return q.sql("feeds.lease_owner = ").arg(owner, "")
	}
	return q.sql("(feeds.lease_owner = ").arg(owner, "text").
		sql(" OR ((feeds.lease_owner = '' OR feeds.lease_until <= ").arg(now, "timestamptz").
		sql(") AND EXISTS (SELECT 1 FROM hosts WHERE hosts.host = feeds.host AND hosts.lease_owner = ").arg(owner, "text").
		sql(")))")
}

// pgDueOnHeldHost is the Postgres condition under which the row "feeds" may
// be in a poller's pass right now (see ClaimDueFeeds): it is due at now and
// an owner other than other holds an unexpired lease on its host. now and
// other are placeholders (or literals); now is used twice, then other.
func pgDueOnHeldHost(now, other string) string {
	return "(next_poll_at <= " + now + " AND EXISTS (SELECT 1 FROM hosts h WHERE h.host = feeds.host" +
		" AND h.lease_owner NOT IN ('', " + other + ") AND h.lease_until > " + now + "))"
}

// ReleaseHosts gives back the leases owner holds on hosts (Postgres; see
// ClaimDueFeeds), so other processes may poll those hosts at once. The
// poller calls it with the hosts its claims took when it has no claimed
// feed left.
func (s *Store) ReleaseHosts(ctx context.Context, owner string, hosts []string) error {
	if !s.sqlDialect().hostLeases() || len(hosts) == 0 {
		return nil
	}
	q := s.psNew().sql("UPDATE hosts SET lease_owner = '', lease_until = NULL WHERE host = ANY(").arg(hosts, "text[]").
		sql(") AND lease_owner = ").arg(owner, "text")
	if _, err := q.exec(ctx, s.psConn(ctx)); err != nil {
		return fmt.Errorf("release hosts: %w", err)
	}
	return nil
}

// ClaimFeedForPoll leases one feed by id regardless of its schedule (for
// `feedmail poll`, pings and revivals). It also moves the feed's
// next_poll_at to at least the end of the lease, so that the feed is not
// shown as due while it is being polled (ClaimDueFeeds would skip it anyway,
// by its lease). It fails with ErrNotFound when another worker holds
// an unexpired lease or the feed does not exist. On Postgres it also fails
// so while the feed is due and another owner holds its host: that owner's
// pass may be polling it (see ClaimDueFeeds).
func (s *Store) ClaimFeedForPoll(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) (*Feed, error) {
	until := utc(now.Add(lease))
	q := `UPDATE feeds SET lease_owner = ?, lease_until = ?,
  next_poll_at = CASE WHEN next_poll_at < ? THEN ? ELSE next_poll_at END
WHERE id = ? AND (lease_until IS NULL OR lease_until <= ? OR lease_owner = ?)`
	args := []any{owner, until, until, until, id, utc(now), owner}
	if s.sqlDialect().hostLeases() {
		q += "\n  AND NOT (state = 'active' AND " + pgDueOnHeldHost("?", "?") + ")"
		args = append(args, utc(now), owner, utc(now))
	}
	q += "\nRETURNING *"
	var out []Feed
	if err := s.DB.WithContext(ctx).Raw(q, args...).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim feed %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("claim feed %d: unknown or held by another worker: %w", id, ErrNotFound)
	}
	return &out[0], nil
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
	if s.sqlDialect().hostLeases() {
		err = db.Raw(`SELECT f.next_poll_at, f.lease_until,
  CASE WHEN h.lease_owner <> ? THEN h.lease_until END AS host_leased
FROM feeds f LEFT JOIN hosts h ON h.host = f.host
WHERE `+polledSQL("f")+` ORDER BY f.next_poll_at LIMIT ?`, owner, nextPollDueScan).Scan(&out).Error
	} else {
		err = db.Model(&Feed{}).Select("next_poll_at", "lease_until").
			Where(polledSQL("")).Order("next_poll_at").Limit(nextPollDueScan).Scan(&out).Error
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
