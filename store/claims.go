package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Claims hand each due row to exactly one worker for a while (its lease).
//
// Outbox emails are claimed by moving the row's due time (next_attempt_at) to
// the end of the lease: a claimed row leaves the due set at once, and a row
// whose holder died becomes due again when its lease runs out.
//
// Feeds are claimed differently, because the poller claims every feed every
// few minutes and a claim that moves next_poll_at costs a second index-moving
// (non-HOT) update of the row per poll, plus a dead index entry at the head
// of the due index that every later claim scans past. A feed claim writes
// only lease_owner and lease_until, which no index covers, so Postgres can
// make it a HOT update (feeds has fillfactor 70 to leave it room on the
// page); the due query skips rows whose lease has not run out. Those are at
// most the claimed-and-unwritten feeds of the running pollers (each keeps at
// most Config.Batch of them), so the skip is short. A row whose holder died
// becomes claimable when its lease runs out, as before.
//
// Either way the holder writes its result guarded by lease_owner, so a
// holder that lost its lease cannot overwrite the newer owner's work.
//
// On Postgres the inner SELECT takes FOR UPDATE SKIP LOCKED, so concurrent
// claimers pass over each other's rows instead of waiting (and a row another
// claimer has just leased fails the re-checked lease condition). On SQLite
// there is one writer at a time and the single UPDATE … RETURNING statement
// is atomic.

// ClaimDueFeeds leases up to limit active feeds whose next poll is due at now,
// that have at least one active, confirmed subscription and that nobody holds
// an unexpired lease on, oldest first. next_poll_at is left as it is.
//
// On Postgres, where several processes poll, a feed is only claimed together
// with its host: the claim takes (or renews) the lease on the hosts row of
// every host in the batch, until the same time as the feed leases, and
// passes over feeds whose host another owner holds. A host is thus polled
// by one process at a time, and that process's in-memory limiter (2
// requests in flight) is the limit publishers see, however many processes
// run. The upsert takes host rows in name order, so two claimers cannot
// deadlock on them; a host another claimer took first is simply not
// returned, and its feeds are not claimed. No fetch outlives its feed's
// lease, and the host lease ends no earlier than the latest feed lease of
// that host, so when a host lease runs out (its holder died) nothing of the
// holder's can still be fetching from that host. ReleaseHosts gives the
// hosts back when a pass is over.
func (s *Store) ClaimDueFeeds(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]Feed, error) {
	until := utc(now.Add(lease))
	if !s.Postgres() {
		var out []Feed
		err := s.DB.WithContext(ctx).Raw(`UPDATE feeds SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT id FROM feeds
  WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at <= ?
    AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_poll_at LIMIT ?)
RETURNING *`, owner, until, utc(now), utc(now), limit).Scan(&out).Error
		if err != nil {
			return nil, fmt.Errorf("claim due feeds: %w", err)
		}
		return out, nil
	}
	// The columns are scanned by hand: gorm's reflection-driven Scan cost
	// more CPU than the claim itself on a warm pass.
	rows, err := s.psConn(ctx).QueryContext(ctx, `WITH c AS (
  SELECT f.id AS claim_id, f.host AS claim_host FROM feeds f LEFT JOIN hosts h ON h.host = f.host
  WHERE f.state = 'active' AND f.subscriber_count > 0 AND f.next_poll_at <= $3
    AND (f.lease_until IS NULL OR f.lease_until <= $3)
    AND (h.lease_until IS NULL OR h.lease_until <= $3 OR h.lease_owner = $1)
  ORDER BY f.next_poll_at LIMIT $4
  FOR UPDATE OF f SKIP LOCKED),
hl AS (
  INSERT INTO hosts (host, lease_owner, lease_until, updated_at)
  SELECT DISTINCT claim_host, $1, $2::timestamptz, $3::timestamptz FROM c ORDER BY claim_host
  ON CONFLICT (host) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
  WHERE hosts.lease_until IS NULL OR hosts.lease_until <= $3 OR hosts.lease_owner = EXCLUDED.lease_owner
  RETURNING host AS leased_host)
UPDATE feeds SET lease_owner = $1, lease_until = $2
FROM c JOIN hl ON hl.leased_host = c.claim_host WHERE feeds.id = c.claim_id
RETURNING `+feedColumns, owner, until, utc(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	out, err := scanFeeds(rows, limit)
	if err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	return out, nil
}

// ReleaseHosts gives back the leases owner holds on hosts (Postgres; see
// ClaimDueFeeds), so other processes may poll those hosts at once. The
// poller calls it with the hosts its claims took when it has no claimed
// feed left.
func (s *Store) ReleaseHosts(ctx context.Context, owner string, hosts []string) error {
	if !s.Postgres() || len(hosts) == 0 {
		return nil
	}
	q := s.psNew().sql("UPDATE hosts SET lease_owner = '', lease_until = NULL WHERE host = ANY(").arg(hosts, "text[]").
		sql(") AND lease_owner = ").arg(owner, "text")
	if _, err := q.exec(ctx, s.psConn(ctx)); err != nil {
		return fmt.Errorf("release hosts: %w", err)
	}
	return nil
}

// FillFeedHosts sets feeds.host on the rows that predate the column (host
// still ” while the URL has a host), in batches, and returns how many it
// set. The poller runs it once at start.
func (s *Store) FillFeedHosts(ctx context.Context) (int, error) {
	n := 0
	var lastID int64
	for {
		var rows []Feed
		err := s.DB.WithContext(ctx).Select("id", "url").Where("host = '' AND id > ?", lastID).
			Order("id").Limit(psChunk).Find(&rows).Error
		if err != nil {
			return n, fmt.Errorf("fill feed hosts: %w", err)
		}
		if len(rows) == 0 {
			return n, nil
		}
		// One statement per chunk: UPDATE … SET host = CASE id WHEN … END.
		q := s.psNew().sql("UPDATE feeds SET host = CASE id")
		var ids []int64
		for _, f := range rows {
			lastID = f.ID
			if h := HostOf(f.URL); h != "" {
				q.sql(" WHEN ").arg(f.ID, "bigint").sql(" THEN ").arg(h, "text")
				ids = append(ids, f.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		k, err := q.sql(" END WHERE host = '' AND id").in(ids).exec(ctx, s.psConn(ctx))
		if err != nil {
			return n, fmt.Errorf("fill feed hosts: %w", err)
		}
		n += int(k)
	}
}

// feedColumns lists every column of feeds in the order scanFeeds reads them.
const feedColumns = `id, url, host, title, site_url, state, subscriber_count, next_poll_at, poll_reason,
  validator_url, etag, last_modified, body_hash, last_polled_at, last_status, last_error, last_elapsed_ms,
  last_success_at, primed_at, last_new_item_at, newest_item_date, consecutive_errors, errors_since,
  last_ping_at, websub_hub, websub_topic, websub_state, websub_secret, websub_expires_at, websub_renew_at,
  lease_owner, lease_until, created_at, updated_at`

// scanFeeds reads rows of feedColumns and closes rows.
func scanFeeds(rows *sql.Rows, capacity int) ([]Feed, error) {
	defer rows.Close()
	out := make([]Feed, 0, capacity)
	for rows.Next() {
		var f Feed
		var subs, status, elapsed, errs int64
		if err := rows.Scan(&f.ID, &f.URL, &f.Host, &f.Title, &f.SiteURL, &f.State, &subs, &f.NextPollAt, &f.PollReason,
			&f.ValidatorURL, &f.ETag, &f.LastModified, &f.BodyHash, &f.LastPolledAt, &status, &f.LastError, &elapsed,
			&f.LastSuccessAt, &f.PrimedAt, &f.LastNewItemAt, &f.NewestItemDate, &errs, &f.ErrorsSince,
			&f.LastPingAt, &f.WebSubHub, &f.WebSubTopic, &f.WebSubState, &f.WebSubSecret, &f.WebSubExpiresAt, &f.WebSubRenewAt,
			&f.LeaseOwner, &f.LeaseUntil, &f.CreatedAt, &f.UpdatedAt); err != nil {
			return nil, err
		}
		f.SubscriberCount, f.LastStatus, f.LastElapsedMS, f.ConsecutiveErrors = int(subs), int(status), int(elapsed), int(errs)
		out = append(out, f)
	}
	return out, rows.Err()
}

// ClaimFeedForPoll leases one feed by id regardless of its schedule (for
// `feedmail poll`, pings and revivals). It also moves the feed's
// next_poll_at to at least the end of the lease, so that the feed is not
// shown as due while it is being polled (ClaimDueFeeds would skip it anyway,
// by its lease). It fails with ErrNotFound when another worker holds
// an unexpired lease or the feed does not exist.
func (s *Store) ClaimFeedForPoll(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) (*Feed, error) {
	until := utc(now.Add(lease))
	q := `UPDATE feeds SET lease_owner = ?, lease_until = ?,
  next_poll_at = CASE WHEN next_poll_at < ? THEN ? ELSE next_poll_at END
WHERE id = ? AND (lease_until IS NULL OR lease_until <= ? OR lease_owner = ?)
RETURNING *`
	var out []Feed
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, until, id, utc(now), owner).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim feed %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("claim feed %d: unknown or held by another worker: %w", id, ErrNotFound)
	}
	return &out[0], nil
}

// ReleaseFeed gives a lease back without recording a poll, and makes the feed
// due again at next.
func (s *Store) ReleaseFeed(ctx context.Context, id int64, owner string, next time.Time) error {
	return s.DB.WithContext(ctx).Exec(`UPDATE feeds SET lease_owner = '', lease_until = NULL, next_poll_at = ?
WHERE id = ? AND lease_owner = ?`, utc(next), id, owner).Error
}

// ClaimOutbox leases up to limit queued emails that are due at now.
func (s *Store) ClaimOutbox(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]OutboxEmail, error) {
	until := utc(now.Add(lease))
	q := `UPDATE outbox SET lease_owner = ?, lease_until = ?, next_attempt_at = ?
WHERE id IN (SELECT id FROM outbox
  WHERE state = 'queued' AND next_attempt_at <= ?
  ORDER BY next_attempt_at LIMIT ?` + s.skipLocked() + `)
RETURNING *`
	var out []OutboxEmail
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	return out, nil
}

// ClaimDueDigests leases up to limit digests whose next slot has come. A
// digest's slot time stays as it is (the issue is keyed on it); the lease
// alone keeps other workers away until it expires.
func (s *Store) ClaimDueDigests(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]Digest, error) {
	until := utc(now.Add(lease))
	q := `UPDATE digests SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT id FROM digests
  WHERE next_slot_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_slot_at LIMIT ?` + s.skipLocked() + `)
RETURNING *`
	var out []Digest
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, utc(now), utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim digests: %w", err)
	}
	return out, nil
}

// SpreadOverdueFeeds moves feeds that are overdue by more than grace to a
// point spread over the next window (by feed id, so every process computes
// the same spot), so that after downtime the backlog is polled evenly rather
// than fired at publishers all at once. Feeds that are only slightly late are
// left alone. It returns how many feeds moved.
func (s *Store) SpreadOverdueFeeds(ctx context.Context, now time.Time, grace, window time.Duration) (int64, error) {
	if window < time.Second {
		return 0, nil
	}
	cutoff := utc(now.Add(-grace))
	secs := int64(window / time.Second)
	var q string
	if s.Postgres() {
		q = `UPDATE feeds SET next_poll_at = ?::timestamptz + make_interval(secs => (id * 7919) % ?)
WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at < ? AND lease_owner = ''`
	} else {
		q = `UPDATE feeds SET next_poll_at = strftime('%Y-%m-%d %H:%M:%S+00:00', ?, '+' || ((id * 7919) % ?) || ' seconds')
WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at < ? AND lease_owner = ''`
	}
	tx := s.DB.WithContext(ctx).Exec(q, utc(now), secs, cutoff)
	if tx.Error != nil {
		return 0, fmt.Errorf("spread overdue feeds: %w", tx.Error)
	}
	return tx.RowsAffected, nil
}
