package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// WebSub subscription states (feeds.websub_state). The subscriber in
// package poller and the callback in package web move a feed between them,
// always by compare-and-set (SetWebSub). Every state but "" has
// websub_renew_at set: when the renewal loop next looks at the feed.
const (
	WebSubStateNone          = ""              // no subscription; polled as usual
	WebSubStateWanted        = "wanted"        // a poll found a hub: subscribe
	WebSubStatePending       = "pending"       // request sent; awaiting verification
	WebSubStateActive        = "active"        // verified: real time, backup poll weekly
	WebSubStateDenied        = "denied"        // hub.mode=denied: polled, retried in a week
	WebSubStateFailed        = "failed"        // refused, unverified or lapsed: polled, retried in a day
	WebSubStateLeaving       = "leaving"       // unfollowed or hub gone: unsubscribe
	WebSubStateUnsubscribing = "unsubscribing" // unsubscription sent; awaiting verification
)

// Timings of the WebSub state machine, shared by the subscriber (package
// poller) and the callback (package web). Renewal at half the lease and
// "denied: retry in a week" are the spec's; the rest are choices.
const (
	// WebSubDeniedRetry: after hub.mode=denied the feed is polled as usual
	// and the subscription is tried again this much later.
	WebSubDeniedRetry = 7 * 24 * time.Hour
	// WebSubFailedRetry: after a hub refused a request (non-2xx), could not
	// be reached, never verified a request, or let a lease lapse, the feed is
	// polled as usual and the subscription is tried again this much later.
	WebSubFailedRetry = 24 * time.Hour
	// WebSubVerifyTimeout is how long a hub has to verify a request it
	// accepted; it is also the claim lease of the renewal loop.
	WebSubVerifyTimeout = time.Hour
	// WebSubUnknownLeaseExpiry is how long a subscription verified without
	// hub.lease_seconds counts as active (it is renewed daily).
	WebSubUnknownLeaseExpiry = 48 * time.Hour
	// WebSubBackupInterval is the backup poll of a feed with an active
	// WebSub subscription (the poller's schedule, rule 1).
	WebSubBackupInterval = 7 * 24 * time.Hour
	// webSubBackupJitter is the spread added to a backup poll set at
	// verification: up to 10 % of the interval, as the poller's jitter.
	webSubBackupJitter = WebSubBackupInterval / 10
)

// WebSubBackupAt is when feed id's backup poll falls once a subscription
// verified at now covers it: WebSubBackupInterval later plus up to 10 % of
// it, spread by feed id (as the poller's jitter spreads polls), so feeds
// verified together are not all polled in the same minute a week later.
func WebSubBackupAt(id int64, now time.Time) time.Time {
	spread := time.Duration(uint64(id)*7919%1000) * (webSubBackupJitter / 1000)
	return now.Add(WebSubBackupInterval + spread)
}

// WebSubActive reports whether feed f is covered by a verified WebSub
// subscription at now: state active and a lease that has not run out. It is
// what the poller passes to Schedule as History.WebSubActive (weekly backup
// poll). A nil feed is not covered.
func WebSubActive(f *Feed, now time.Time) bool {
	return f != nil && f.WebSubState == WebSubStateActive &&
		(f.WebSubExpiresAt == nil || f.WebSubExpiresAt.After(now))
}

// WebSubFields are a feed's websub_* columns.
type WebSubFields struct {
	Hub       string
	Topic     string
	State     string
	Secret    string
	ExpiresAt *time.Time
	RenewAt   *time.Time
}

// WebSub returns the feed's websub_* columns.
func (f *Feed) WebSub() WebSubFields {
	return WebSubFields{Hub: f.WebSubHub, Topic: f.WebSubTopic, State: f.WebSubState, Secret: f.WebSubSecret,
		ExpiresAt: f.WebSubExpiresAt, RenewAt: f.WebSubRenewAt}
}

// SetWebSub replaces the websub_* columns of feed id with to, provided they
// still hold from's Hub, Topic, State and Secret (the times are not
// compared). It reports whether the row was changed. websub_no_lease is
// kept while the hub and topic stay, and cleared when either changes (see
// SetWebSubNoLease).
//
// A non-zero resumeAt also brings the feed's next poll forward to resumeAt
// when it was due later, with poll reason resumeReason: the subscription
// stopped covering the feed, and a weekly backup poll is no longer enough.
// A feed that is leased by a poll in progress keeps its next_poll_at (the
// poll in progress writes a new one).
func (s *Store) SetWebSub(ctx context.Context, id int64, from, to WebSubFields, resumeAt time.Time, resumeReason string) (bool, error) {
	return s.setWebSub(ctx, id, from, to, func(set *string, args *[]any) {
		if resumeAt.IsZero() {
			return
		}
		at := utc(resumeAt)
		*set += `,
  poll_reason = CASE WHEN next_poll_at > ? AND (lease_until IS NULL OR lease_until <= ?) THEN ? ELSE poll_reason END,
  next_poll_at = CASE WHEN next_poll_at > ? AND (lease_until IS NULL OR lease_until <= ?) THEN ? ELSE next_poll_at END`
		*args = append(*args, at, at, resumeReason, at, at, at)
	})
}

// SetWebSubCovering is SetWebSub for a change that makes the subscription
// cover the feed (a hub verified it at now): it also puts the feed's next
// poll off to backupAt (WebSubBackupAt), with poll reason reason, so the
// poll scheduled as for a feed without WebSub becomes the backup poll at
// once. Only a later poll of an active feed is put off; a feed that is due
// (a ping, a first poll, a poll that is late), leased by a poll in progress
// (its write decides) or holding a queued ping keeps its next_poll_at, and
// one already due after backupAt too.
func (s *Store) SetWebSubCovering(ctx context.Context, id int64, from, to WebSubFields, now, backupAt time.Time, reason string) (bool, error) {
	return s.setWebSub(ctx, id, from, to, func(set *string, args *[]any) {
		cond := `state = 'active' AND next_poll_at > ? AND next_poll_at < ? AND (lease_until IS NULL OR lease_until <= ?)
    AND ping_queued_at IS NULL`
		n, at := utc(now), utc(backupAt)
		*set += `,
  poll_reason = CASE WHEN ` + cond + ` THEN ? ELSE poll_reason END,
  next_poll_at = CASE WHEN ` + cond + ` THEN ? ELSE next_poll_at END`
		*args = append(*args, n, at, n, reason, n, at, n, at)
	})
}

// setWebSub is the compare-and-set of SetWebSub; poll, when not nil, adds
// SET items (and their arguments) that move the feed's next poll.
func (s *Store) setWebSub(ctx context.Context, id int64, from, to WebSubFields, poll func(set *string, args *[]any)) (bool, error) {
	set := `websub_no_lease = CASE WHEN websub_hub = ? AND websub_topic = ? THEN websub_no_lease ELSE FALSE END,
  websub_hub = ?, websub_topic = ?, websub_state = ?, websub_secret = ?, websub_expires_at = ?, websub_renew_at = ?, updated_at = ?`
	args := []any{to.Hub, to.Topic, to.Hub, to.Topic, to.State, to.Secret, utcPtrOrNil(to.ExpiresAt), utcPtrOrNil(to.RenewAt), s.now()}
	if poll != nil {
		poll(&set, &args)
	}
	q := `UPDATE feeds SET ` + set + `
WHERE id = ? AND websub_hub = ? AND websub_topic = ? AND websub_state = ? AND websub_secret = ?`
	args = append(args, id, from.Hub, from.Topic, from.State, from.Secret)
	tx := s.DB.WithContext(ctx).Exec(q, args...)
	if tx.Error != nil {
		return false, fmt.Errorf("set websub of feed %d: %w", id, tx.Error)
	}
	return tx.RowsAffected == 1, nil
}

// SetWebSubNoLease records that feed id's hub refused a subscription
// request carrying hub.lease_seconds and accepted one without: later
// requests for that hub and topic leave the lease out. It changes nothing
// when the feed's subscription has moved to another hub or topic since.
func (s *Store) SetWebSubNoLease(ctx context.Context, id int64, hub, topic string) error {
	err := s.DB.WithContext(ctx).Model(&Feed{}).Where("id = ? AND websub_hub = ? AND websub_topic = ?", id, hub, topic).
		UpdateColumns(map[string]any{"websub_no_lease": true, "updated_at": s.now()}).Error
	if err != nil {
		return fmt.Errorf("set websub no-lease of feed %d: %w", id, err)
	}
	return nil
}

// ClaimWebSubWork hands out up to limit feeds whose websub_renew_at has come
// (renewals, retries, requests to send, verifications that never came), oldest
// first, and moves their websub_renew_at to now+lease: the claim. Another
// process will not see them again until then, and a claimer that dies simply
// leaves them to be claimed again when the lease ends. On Postgres the inner
// SELECT skips rows another claimer has locked.
func (s *Store) ClaimWebSubWork(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Feed, error) {
	until := utc(now.Add(lease))
	d := s.sqlDialect()
	q := `UPDATE feeds SET websub_renew_at = ?
WHERE ` + d.idInSelect(`SELECT id FROM feeds
  WHERE websub_state <> '' AND websub_renew_at <= ?
  ORDER BY websub_renew_at LIMIT ?`+d.skipLocked()) + `
RETURNING *`
	var out []Feed
	if err := s.DB.WithContext(ctx).Raw(q, until, utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim websub work: %w", err)
	}
	return out, nil
}

// RetireOrphanWebSubs handles feeds that nobody receives any more (no
// active subscription, or the feed is gone or blacklisted): an active or
// pending WebSub subscription becomes "leaving", due now, so the renewal
// loop unsubscribes from the hub; one that was only wanted, denied or failed
// is simply cleared. It returns how many feeds changed. Both statements are
// idempotent and safe to run from several processes at once.
func (s *Store) RetireOrphanWebSubs(ctx context.Context, now time.Time) (int64, error) {
	orphan := `(subscriber_count = 0 OR state <> 'active')`
	var n int64
	err := s.Tx(ctx, func(tx *Store) error {
		r := tx.DB.Model(&Feed{}).Where("websub_state IN ? AND "+orphan, []string{WebSubStateActive, WebSubStatePending}).
			UpdateColumns(map[string]any{"websub_state": WebSubStateLeaving, "websub_renew_at": utc(now), "updated_at": utc(now)})
		if r.Error != nil {
			return r.Error
		}
		n += r.RowsAffected
		r = tx.DB.Model(&Feed{}).Where("websub_state IN ? AND "+orphan, []string{WebSubStateWanted, WebSubStateDenied, WebSubStateFailed}).
			UpdateColumns(map[string]any{"websub_hub": "", "websub_topic": "", "websub_state": "", "websub_secret": "",
				"websub_expires_at": nil, "websub_renew_at": nil, "updated_at": utc(now)})
		if r.Error != nil {
			return r.Error
		}
		n += r.RowsAffected
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("retire orphan websub subscriptions: %w", err)
	}
	return n, nil
}

// FeedsForPing returns up to limit feeds that a publisher's ping of any of
// urls may mean: feeds with that URL, that self URL (WebSub topic) or that
// site URL (weblogUpdates.ping names the site, not the feed), by id.
func (s *Store) FeedsForPing(ctx context.Context, urls []string, limit int) ([]Feed, error) {
	var clean []string
	for _, u := range urls {
		if u = strings.TrimSpace(u); u != "" {
			clean = append(clean, u)
		}
	}
	if len(clean) == 0 {
		return nil, nil
	}
	var out []Feed
	err := s.DB.WithContext(ctx).
		Where("url IN ? OR websub_topic IN ? OR site_url IN ?", clean, clean, clean).
		Order("id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("feeds for ping: %w", err)
	}
	return out, nil
}

// PingResult is what a publisher's ping did to one feed.
type PingResult int

// Ping results.
const (
	// PingScheduled: the feed is due now (an early conditional poll).
	PingScheduled PingResult = iota + 1
	// PingQueued: a poll of the feed is running right now (it may have
	// fetched before the post); the ping is queued, and that poll's write
	// makes the feed due again at once if its request went out at or after
	// the ping (see RecordPolls), so one more conditional poll follows.
	PingQueued
	// PingTooSoon: the feed was pinged less than the minimum gap ago; this
	// ping is accepted and does nothing.
	PingTooSoon
	// PingRevive: the feed is blacklisted; the caller polls it now and lifts
	// the blacklist only if that poll succeeds.
	PingRevive
	// PingNotFollowed: nobody receives the feed, so it is not polled.
	PingNotFollowed
	// PingGone: the feed answered 410 Gone and is never polled again.
	PingGone
)

// String names the result, for logs and metrics.
func (r PingResult) String() string {
	switch r {
	case PingScheduled:
		return "scheduled"
	case PingQueued:
		return "queued"
	case PingTooSoon:
		return "too_soon"
	case PingRevive:
		return "revive"
	case PingNotFollowed:
		return "not_followed"
	case PingGone:
		return "gone"
	}
	return fmt.Sprintf("ping(%d)", int(r))
}

// PingFeed records a publisher's ping of feed f at now, at most one per
// minGap per feed (last_ping_at, checked and set in one conditional UPDATE,
// so concurrent pings and several processes agree). For an active,
// followed feed that is not being polled right now it makes the feed due
// now (never later than it already was) with the reason "publisher ping".
// Being polled means leased, or on Postgres also due while a poller holds
// its host; then next_poll_at is left to the poll in progress, whose write
// would overwrite it, and the ping is queued in ping_queued_at instead
// (PingQueued): that write makes the feed due again (see RecordPolls). The
// minimum gap holds for queued pings too. A blacklisted feed only gets
// last_ping_at: the caller polls it (PingRevive).
func (s *Store) PingFeed(ctx context.Context, f *Feed, now time.Time, minGap time.Duration) (PingResult, error) {
	now = utc(now)
	switch {
	case f.State == FeedGone:
		return PingGone, nil
	case f.State == FeedActive && f.SubscriberCount == 0:
		return PingNotFollowed, nil
	case f.State != FeedActive && f.State != FeedBlacklisted:
		return PingNotFollowed, nil
	}
	gap := `(last_ping_at IS NULL OR last_ping_at <= ?)`
	cutoff := now.Add(-minGap)
	var tx = s.DB.WithContext(ctx)
	if f.State == FeedBlacklisted {
		r := tx.Model(&Feed{}).Where("id = ? AND state = ? AND "+gap, f.ID, FeedBlacklisted, cutoff).UpdateColumn("last_ping_at", now)
		if r.Error != nil {
			return 0, fmt.Errorf("ping feed %d: %w", f.ID, r.Error)
		}
		if r.RowsAffected == 0 {
			return PingTooSoon, nil
		}
		return PingRevive, nil
	}
	var out []struct {
		Free bool
	}
	var r *gorm.DB
	if s.sqlDialect().hostLeases() {
		// A poller holds a feed through its host's lease (ClaimDueFeeds):
		// a due feed whose host is held may be being fetched right now, and
		// the poll's result would overwrite a next_poll_at set now. It
		// counts as in progress: the ping is queued. The CTE judges the row
		// as it was before this UPDATE (after any poll write it waited for).
		r = tx.Raw(`WITH o AS (SELECT id, (lease_until IS NULL OR lease_until <= @now)
    AND NOT `+pgDueOnHeldHost("@now", "''")+` AS free
  FROM feeds WHERE id = @id FOR UPDATE)
UPDATE feeds SET last_ping_at = @now,
  ping_queued_at = CASE WHEN o.free THEN feeds.ping_queued_at ELSE @now END,
  poll_reason = CASE WHEN o.free AND feeds.next_poll_at > @now THEN @reason ELSE feeds.poll_reason END,
  next_poll_at = CASE WHEN o.free AND feeds.next_poll_at > @now THEN @now ELSE feeds.next_poll_at END
FROM o WHERE feeds.id = o.id AND `+polledSQL("feeds")+`
  AND (feeds.last_ping_at IS NULL OR feeds.last_ping_at <= @cutoff)
RETURNING o.free`, sql.Named("now", now), sql.Named("id", f.ID), sql.Named("reason", "publisher ping: poll now"),
			sql.Named("cutoff", cutoff)).Scan(&out)
	} else {
		free := `(lease_until IS NULL OR lease_until <= ?)`
		r = tx.Raw(`UPDATE feeds SET last_ping_at = ?,
  ping_queued_at = CASE WHEN `+free+` THEN ping_queued_at ELSE ? END,
  poll_reason = CASE WHEN `+free+` AND next_poll_at > ? THEN ? ELSE poll_reason END,
  next_poll_at = CASE WHEN `+free+` AND next_poll_at > ? THEN ? ELSE next_poll_at END
WHERE id = ? AND `+polledSQL("")+` AND `+gap+`
RETURNING (lease_until IS NULL OR lease_until <= ?) AS free`,
			now, now, now, now, now, "publisher ping: poll now", now, now, now, f.ID, cutoff, now).Scan(&out)
	}
	if r.Error != nil {
		return 0, fmt.Errorf("ping feed %d: %w", f.ID, r.Error)
	}
	switch {
	case len(out) == 0:
		return PingTooSoon, nil
	case !out[0].Free:
		return PingQueued, nil
	}
	return PingScheduled, nil
}

// LiftBlacklist puts a blacklisted feed back into service after a poll that
// began at since fetched it fine (last_success_at at or after since): state
// active, error streak cleared. It reports whether the feed was lifted; a
// feed that is no longer blacklisted, or has not succeeded since, is left
// alone.
func (s *Store) LiftBlacklist(ctx context.Context, id int64, since time.Time, reason string) (bool, error) {
	r := s.DB.WithContext(ctx).Exec(`UPDATE feeds SET state = ?, consecutive_errors = 0, errors_since = NULL,
  poll_reason = CASE WHEN ? <> '' THEN ? ELSE poll_reason END, updated_at = ?
WHERE id = ? AND state = ? AND last_success_at IS NOT NULL AND last_success_at >= ?`,
		FeedActive, reason, reason, s.now(), id, FeedBlacklisted, utc(since))
	if r.Error != nil {
		return false, fmt.Errorf("lift blacklist of feed %d: %w", id, r.Error)
	}
	return r.RowsAffected == 1, nil
}
