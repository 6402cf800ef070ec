package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Destinations that turned our mail away for the sender's own sake (a
// blocklist, SPF/DKIM/DMARC, content, a rate limit): such a failure never
// counts against the reader; it pauses the recipient's whole domain
// instead, for every process, through the mail_destinations table (see
// migration 00016). How long a pause lasts is the mailer's rule, passed in;
// the store only keeps the streak and the end of the pause, and puts the
// outbox rows back.

// MailDestination is a recipient domain paused after a sender-side
// failure.
type MailDestination struct {
	Domain      string `gorm:"primaryKey"`
	PausedUntil time.Time
	Reason      string // the bounce.Reason of the failure that paused it
	Failures    int    // consecutive pauses: the streak the delay grows with
	UpdatedAt   time.Time
}

// TableName names the table.
func (MailDestination) TableName() string { return "mail_destinations" }

// MailDestinations returns the rows of the given domains (a domain without
// a row is absent), in one query per psChunk domains: what a pass of the
// outbox reads once for the rows it claimed.
func (s *Store) MailDestinations(ctx context.Context, domains []string) (map[string]MailDestination, error) {
	out := map[string]MailDestination{}
	for start := 0; start < len(domains); start += psChunk {
		var rows []MailDestination
		part := domains[start:min(start+psChunk, len(domains))]
		if err := s.DB.WithContext(ctx).Where("domain IN ?", part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("mail destinations: %w", err)
		}
		for _, r := range rows {
			out[r.Domain] = r
		}
	}
	return out, nil
}

// PauseMailDestination records a sender-side failure of mail to domain at
// the store's clock, in one transaction that serialises every process on
// the domain's row, and returns the row. A domain paused already (by
// another process, or by a send of this one that failed first) keeps its
// pause: a batch of refusals is one step of the streak, not many.
// Otherwise the streak grows by one, or starts again at one when the last
// pause ended more than forget ago, and the pause ends delay(streak) from
// now. paused reports whether this call set the pause.
func (s *Store) PauseMailDestination(ctx context.Context, domain, reason string, delay func(streak int) time.Duration,
	forget time.Duration) (d MailDestination, paused bool, err error) {
	now := s.now()
	err = s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		fresh := MailDestination{Domain: domain, PausedUntil: now.Add(delay(1)), Reason: reason, Failures: 1, UpdatedAt: now}
		res := db.Exec(`INSERT INTO mail_destinations (domain, paused_until, reason, failures, updated_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (domain) DO NOTHING`, fresh.Domain, fresh.PausedUntil, fresh.Reason, fresh.Failures, now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			d, paused = fresh, true
			return nil
		}
		if err := tx.sqlDialect().lockRow(db.Where("domain = ?", domain)).Take(&d).Error; err != nil {
			return err
		}
		if d.PausedUntil.After(now) {
			return nil
		}
		streak := d.Failures + 1
		if now.Sub(d.PausedUntil) > forget {
			streak = 1
		}
		d.Failures, d.PausedUntil, d.Reason, d.UpdatedAt, paused = streak, now.Add(delay(streak)), reason, now, true
		return db.Model(&MailDestination{}).Where("domain = ?", domain).UpdateColumns(map[string]any{
			"paused_until": d.PausedUntil, "reason": d.Reason, "failures": d.Failures, "updated_at": now}).Error
	})
	if err != nil {
		return MailDestination{}, false, fmt.Errorf("pause mail to %s: %w", domain, err)
	}
	d.PausedUntil, d.UpdatedAt = d.PausedUntil.UTC(), d.UpdatedAt.UTC()
	return d, paused, nil
}

// ClearMailDestinations ends the streak of the domains mail was just
// delivered to: their rows are deleted, unless a pause was set after
// before (the send started before that refusal and tells nothing newer).
func (s *Store) ClearMailDestinations(ctx context.Context, domains []string, before time.Time) (int64, error) {
	if len(domains) == 0 {
		return 0, nil
	}
	sort.Strings(domains)
	res := s.DB.WithContext(ctx).Where("domain IN ? AND updated_at <= ?", domains, utc(before)).Delete(&MailDestination{})
	if res.Error != nil {
		return 0, fmt.Errorf("clear mail destinations: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// DeferOutbox puts rows owner holds back in the queue, due at until,
// without counting an attempt, with note in last_error, and starts their
// blocked_since clock if it is not running: the rows' destination refused
// our mail for the sender's sake, or is paused for it. It returns how many
// rows owner still held.
func (s *Store) DeferOutbox(ctx context.Context, owner string, ids []int64, until time.Time, note string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, last_error = ?,
  blocked_since = COALESCE(blocked_since, ?), lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ? AND state = ?`, utc(until), outboxClip(note), s.now(), outboxUniq(ids), owner, OutboxQueued)
	if res.Error != nil {
		return 0, fmt.Errorf("defer outbox: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// RecordMailEvents appends events in one statement (At defaults to now,
// details are clipped as RecordMailEvent does).
func (s *Store) RecordMailEvents(ctx context.Context, events []MailEvent) error {
	if len(events) == 0 {
		return nil
	}
	rows := make([]MailEvent, len(events))
	for i, e := range events {
		if e.At.IsZero() {
			e.At = s.now()
		}
		e.Domain, e.Status, e.Detail = clip(e.Domain, 255), clip(e.Status, 16), clip(e.Detail, 300)
		rows[i] = e
	}
	if err := s.DB.WithContext(ctx).CreateInBatches(&rows, psChunk).Error; err != nil {
		return fmt.Errorf("record mail events: %w", err)
	}
	return nil
}

// PruneMailRecords deletes at most limit mail_events older than before,
// and the destinations whose pause ended before endedBefore (a streak long
// over). It returns how many events it deleted.
func (s *Store) PruneMailRecords(ctx context.Context, before, endedBefore time.Time, limit int) (int64, error) {
	db := s.DB.WithContext(ctx)
	res := db.Exec(`DELETE FROM mail_events WHERE id IN (SELECT id FROM mail_events WHERE at < ? ORDER BY id LIMIT ?)`,
		utc(before), max(limit, 1))
	if res.Error != nil {
		return 0, fmt.Errorf("prune mail events: %w", res.Error)
	}
	if err := db.Where("paused_until < ?", utc(endedBefore)).Delete(&MailDestination{}).Error; err != nil {
		return res.RowsAffected, fmt.Errorf("prune mail destinations: %w", err)
	}
	return res.RowsAffected, nil
}
