package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Feed states.
const (
	FeedActive      = "active"
	FeedGone        = "gone"        // 410: never polled again
	FeedBlacklisted = "blacklisted" // 90 days of nothing but errors
)

// Feed is one feed URL, fetched once however many people follow it. It holds
// everything the poller needs to decide the next poll and to send a polite,
// conditional request.
type Feed struct {
	ID                int64 `gorm:"primaryKey"`
	URL               string
	Host              string // HostOf(URL), set by the store whenever URL is written
	Title             string
	SiteURL           string
	State             string
	SubscriberCount   int // active, confirmed subscriptions; kept in step by the store
	NextPollAt        time.Time
	PollReason        string
	ValidatorURL      string // the final URL the stored validators came from
	ETag              string `gorm:"column:etag"`
	LastModified      string
	BodyHash          string
	LastPolledAt      *time.Time
	LastStatus        int
	LastError         string
	LastElapsedMS     int `gorm:"column:last_elapsed_ms"`
	LastSuccessAt     *time.Time
	PrimedAt          *time.Time // first successful parse: items before it are never mailed
	LastNewItemAt     *time.Time
	NewestItemDate    *time.Time
	ConsecutiveErrors int
	ErrorsSince       *time.Time
	LastPingAt        *time.Time
	// PingQueuedAt is set when a publisher pinged while a poll of the feed
	// was in progress: the write of that poll (or of the next one) makes the
	// feed due at once and clears it (see PingFeed).
	PingQueuedAt    *time.Time
	WebSubHub       string     `gorm:"column:websub_hub"`
	WebSubTopic     string     `gorm:"column:websub_topic"`
	WebSubState     string     `gorm:"column:websub_state"`
	WebSubSecret    string     `gorm:"column:websub_secret"`
	WebSubExpiresAt *time.Time `gorm:"column:websub_expires_at"`
	WebSubRenewAt   *time.Time `gorm:"column:websub_renew_at"`
	// WebSubNoLease: the hub refused a request with hub.lease_seconds and
	// took it without, so requests to it leave the lease out. Only
	// SetWebSubNoLease sets it; SetWebSub clears it with a new hub or topic.
	WebSubNoLease bool `gorm:"column:websub_no_lease"`
	LeaseOwner    string
	LeaseUntil    *time.Time
	// LogSeq counts the polls and pushes recorded. LoggedAt is when the
	// newest poll_log line was written, if that line is a poll's (a push
	// clears it): the line later identical polls may be folded into (see
	// PollRecord.Fold).
	LogSeq   int64
	LoggedAt *time.Time
	// RateScore, RateAllowance, RateAt and RateSince are the feed's
	// billing.FeedRate (burst protection), written with its new posts.
	RateScore     float64
	RateAllowance float64
	RateAt        *time.Time
	RateSince     *time.Time
	// The rediscovery worker's columns (see RecordRecovery): when its next
	// attempt is due, its last one, the attempts of the current episode
	// (Episode: the errors_since of a failing feed, the last_new_item_at
	// of a stale one), what the feed is to its readers (Recovery*) and the
	// last attempt's result as JSON.
	RecoveryNextAt   *time.Time
	RecoveryAt       *time.Time
	RecoveryAttempts int
	RecoveryEpisode  *time.Time
	RecoveryState    string
	RecoveryNote     string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// EnsureFeed returns the feed with this URL, creating it (due now) when absent.
func (s *Store) EnsureFeed(ctx context.Context, url string) (f *Feed, created bool, err error) {
	now := s.now()
	nf := Feed{URL: url, State: FeedActive, NextPollAt: now, PollReason: "new feed: first poll",
		CreatedAt: now, UpdatedAt: now}
	res := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&nf)
	if res.Error != nil {
		return nil, false, fmt.Errorf("create feed: %w", res.Error)
	}
	f, err = s.FeedByURL(ctx, url)
	return f, res.RowsAffected == 1, err
}

// HostKey is the feed's host key (HostOf of its URL): the stored Host, or
// worked out from the URL for a row not filled in yet.
func (f *Feed) HostKey() string {
	if f.Host != "" {
		return f.Host
	}
	return HostOf(f.URL)
}

// BeforeSave keeps Host in step with URL whenever gorm writes a Feed
// (raw statements that change a URL set host themselves).
func (f *Feed) BeforeSave(*gorm.DB) error {
	f.Host = HostOf(f.URL)
	return nil
}

// polledSQL is the condition that the feed row alias a ("" for the bare
// table) is polled: active, with a subscriber. It is the predicate of the
// partial index feeds_due word for word, so both databases use that index.
func polledSQL(a string) string {
	if a != "" {
		a += "."
	}
	return a + "state = 'active' AND " + a + "subscriber_count > 0"
}

// FeedByURL looks a feed up by its URL.
func (s *Store) FeedByURL(ctx context.Context, url string) (*Feed, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Where("url = ?", url).Take(&f).Error; err != nil {
		return nil, fmt.Errorf("feed %s: %w", url, notFound(err))
	}
	return &f, nil
}

// FeedByID looks a feed up by id.
func (s *Store) FeedByID(ctx context.Context, id int64) (*Feed, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Take(&f, id).Error; err != nil {
		return nil, fmt.Errorf("feed %d: %w", id, notFound(err))
	}
	return &f, nil
}

// CountDueFeeds counts active, subscribed feeds due at the store clock's now
// and not being polled (no unexpired lease), up to DueCountCap: a queue
// depth for metrics. It walks the feeds_due index from the oldest due feed
// and stops at the cap, so it costs the due feeds it counts, not a scan of
// the whole table (a million feeds every 15 s) when the planner misjudges
// how many are due.
func (s *Store) CountDueFeeds(ctx context.Context) (int64, error) {
	var n int64
	now := s.now()
	err := s.DB.WithContext(ctx).Raw(`SELECT count(*) FROM (SELECT 1 FROM feeds
  WHERE `+polledSQL("")+` AND next_poll_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_poll_at LIMIT ?) AS due`, now, now, DueCountCap).Scan(&n).Error
	return n, err
}

// DueCountCap is the most CountDueFeeds counts: a backlog that deep is an
// alarm whatever its exact size.
const DueCountCap = 10000

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
  last_ping_at, ping_queued_at, websub_hub, websub_topic, websub_state, websub_secret, websub_expires_at, websub_renew_at,
  websub_no_lease,
  lease_owner, lease_until, log_seq, logged_at, created_at, updated_at`

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
			&f.LastPingAt, &f.PingQueuedAt, &f.WebSubHub, &f.WebSubTopic, &f.WebSubState, &f.WebSubSecret, &f.WebSubExpiresAt, &f.WebSubRenewAt,
			&f.WebSubNoLease,
			&f.LeaseOwner, &f.LeaseUntil, &f.LogSeq, &f.LoggedAt, &f.CreatedAt, &f.UpdatedAt); err != nil {
			return nil, err
		}
		f.SubscriberCount, f.LastStatus, f.LastElapsedMS, f.ConsecutiveErrors = int(subs), int(status), int(elapsed), int(errs)
		out = append(out, f)
	}
	return out, rows.Err()
}

// SpreadOverdueFeeds moves feeds that are overdue by more than grace to a
// point spread evenly over the next window in the order they came due
// (oldest first; feeds due at the same moment, as an import's, mixed by an
// id hash so that one host's feeds do not come due together), so that
// after downtime the backlog is polled
// evenly rather than fired at publishers all at once, and the feeds that
// waited longest wait no longer. Feeds that are only slightly late are
// left alone, and so are feeds never polled: their first poll is no return
// after downtime, and waits only for the per-host limits (an import of a
// million feeds spread over the window could go no faster than a million
// per window). It returns how many feeds moved.
//
// It moves nothing while some feed was polled within grace: the service was
// not down, other processes are working through a backlog oldest first, and
// a process that starts (a restart, a crash loop, a rolling deploy) must
// not push their overdue feeds to the back again each time it does.
func (s *Store) SpreadOverdueFeeds(ctx context.Context, now time.Time, grace, window time.Duration) (int64, error) {
	if window < time.Second {
		return 0, nil
	}
	cutoff := utc(now.Add(-grace))
	var recent int64
	if err := s.DB.WithContext(ctx).Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM feeds WHERE last_polled_at > ? LIMIT 1) AS r`,
		cutoff).Scan(&recent).Error; err != nil {
		return 0, fmt.Errorf("spread overdue feeds: polled lately: %w", err)
	}
	if recent > 0 {
		return 0, nil
	}
	secs := int64(window / time.Second)
	q := `UPDATE feeds SET next_poll_at = ` + s.sqlDialect().addSeconds("o.rn * ? / (o.cnt + 1)") + `
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY next_poll_at, (id * 7919) % ?, id) AS rn, COUNT(*) OVER () AS cnt FROM feeds
  WHERE ` + polledSQL("") + ` AND next_poll_at < ? AND lease_owner = '' AND last_polled_at IS NOT NULL) AS o
WHERE feeds.id = o.id`
	tx := s.DB.WithContext(ctx).Exec(q, utc(now), secs, secs, cutoff)
	if tx.Error != nil {
		return 0, fmt.Errorf("spread overdue feeds: %w", tx.Error)
	}
	return tx.RowsAffected, nil
}

// SetFeedMetaIfEmpty records a feed's title and site address as learned at
// signup, without overwriting what the poller has already stored.
func (s *Store) SetFeedMetaIfEmpty(ctx context.Context, feedID int64, title, siteURL string) error {
	db := s.DB.WithContext(ctx).Model(&Feed{})
	if title != "" {
		if err := db.Where("id = ? AND title = ''", feedID).Update("title", title).Error; err != nil {
			return fmt.Errorf("feed %d title: %w", feedID, err)
		}
	}
	if siteURL != "" {
		if err := s.DB.WithContext(ctx).Model(&Feed{}).Where("id = ? AND site_url = ''", feedID).
			Update("site_url", siteURL).Error; err != nil {
			return fmt.Errorf("feed %d site: %w", feedID, err)
		}
	}
	return nil
}

// FeedForStatus returns the feed with this URL for the public status page,
// with its newest polls (newest first).
func (s *Store) FeedForStatus(ctx context.Context, url string, polls int) (*Feed, []PollLog, error) {
	var f Feed
	if err := s.DB.WithContext(ctx).Where("url = ?", url).Take(&f).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, fmt.Errorf("feed %s: %w", url, ErrNotFound)
		}
		return nil, nil, fmt.Errorf("feed %s: %w", url, err)
	}
	var logs []PollLog
	if err := s.DB.WithContext(ctx).Where("feed_id = ?", f.ID).Order("polled_at DESC, id DESC").
		Limit(polls).Find(&logs).Error; err != nil {
		return nil, nil, fmt.Errorf("polls of feed %d: %w", f.ID, err)
	}
	return &f, logs, nil
}

// DueAgainByReason makes the active feeds no poller holds whose poll reason
// starts with one of prefixes due at now, with reason, and returns how
// many. The poller uses it for feeds an earlier setting of this
// installation refused, once the setting allows them.
func (s *Store) DueAgainByReason(ctx context.Context, prefixes []string, now time.Time, reason string) (int64, error) {
	if len(prefixes) == 0 {
		return 0, nil
	}
	now = now.UTC()
	q := s.psNew().sql("UPDATE feeds SET next_poll_at = ").arg(now, "timestamptz").sql(", poll_reason = ").arg(reason, "text").
		sql(", updated_at = ").arg(now, "timestamptz").sql("\nWHERE state = ").arg(FeedActive, "text").
		sql(" AND (lease_until IS NULL OR lease_until < ").arg(now, "timestamptz").sql(") AND next_poll_at > ").arg(now, "timestamptz").sql(" AND (")
	for i, p := range prefixes {
		if i > 0 {
			q.sql(" OR ")
		}
		q.sql("substr(poll_reason, 1, ").arg(len(p), "integer").sql(") = ").arg(p, "text")
	}
	q.sql(")")
	n, err := q.exec(ctx, s.psConn(ctx))
	if err != nil {
		return 0, fmt.Errorf("make refused feeds due: %w", err)
	}
	return n, nil
}
