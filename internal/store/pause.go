package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Pausing: a reader pauses one subscription or their whole account, until
// a time or until they resume. While a pause lasts the instant fan-out
// (fanout.go) routes nothing to it, so posts published meanwhile are never
// mailed nor charged; a digest subscription keeps collecting its items but
// digest assembly leaves them waiting (digests_assemble.go), so the first
// issue due after the pause carries them as one issue. Email already
// waiting when the pause starts (queued, or held for credits or a bouncing
// address; for a subscription its instant emails, for the account also
// its digest issues) is held with HoldPaused and queued again when the
// pause ends (Resume, or EndPauses once paused_until has passed); the
// mailer then holds it again if credits or the address still say so. A
// pause is over once paused_until <= now, whether or not the columns have
// been cleared yet.

// ErrPauseInPast is returned by Pause for an end that is not in the future.
var ErrPauseInPast = errors.New("the pause would end in the past")

// IsPaused reports whether a pause stored as (at, until) lasts at now.
func IsPaused(at, until *time.Time, now time.Time) bool {
	return at != nil && (until == nil || until.After(now))
}

// pausedSQL is the condition that the row alias a (subscriptions or users)
// is paused at the time parameter (one ?): IsPaused in SQL. Every
// statement that asks whether a pause lasts uses it (directly or through
// pausedArg), so the rule is written here only.
func pausedSQL(a string) string {
	return "(" + a + ".paused_at IS NOT NULL AND (" + a + ".paused_until IS NULL OR " + a + ".paused_until > ?))"
}

// pauseEndedSQL is the condition that the row alias a has a pause whose end
// has passed at the time parameter (one ?) and whose columns are not
// cleared yet (see EndPauses): a paused_at and not pausedSQL, written so
// that the partial index on paused_until serves it. TestPauseRuleOnce
// checks both conditions against IsPaused.
func pauseEndedSQL(a string) string {
	return "(" + a + ".paused_at IS NOT NULL AND " + a + ".paused_until <= ?)"
}

// pausedArg appends pausedSQL(a) to q with now as its parameter, for the
// statements built with psQuery.
func pausedArg(q *psQuery, a string, now time.Time) *psQuery {
	head, tail, _ := strings.Cut(pausedSQL(a), "?")
	return q.sql(head).arg(now, "timestamptz").sql(tail)
}

// Pause pauses subscription subID of userID, or the whole account when
// subID is 0, until until (nil: until resumed), and holds the email
// waiting for it. Pausing again replaces the end. It returns ErrNotFound
// for a subscription that is not userID's or has ended, ErrPauseInPast
// when until is not after now; then nothing changed.
func (s *Store) Pause(ctx context.Context, userID, subID int64, until *time.Time) error {
	now := s.now().Truncate(time.Second)
	if until != nil && !until.After(now) {
		return fmt.Errorf("pause until %s: %w", until.UTC().Format(time.RFC3339), ErrPauseInPast)
	}
	var end *time.Time
	if until != nil {
		t := until.UTC().Truncate(time.Second)
		end = &t
	}
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		table, where, args := "users", "id = ? AND deleted_at IS NULL", []any{userID}
		hold := `user_id = ? AND kind IN ('item', 'digest')`
		holdArgs := []any{userID}
		if subID != 0 {
			table, where, args = "subscriptions", "id = ? AND user_id = ? AND state <> ?", []any{subID, userID, SubEnded}
			hold, holdArgs = `subscription_id = ? AND kind = 'item'`, []any{subID}
		}
		// A pause that lasts keeps its start; one that ended starts anew.
		res := db.Exec(`UPDATE `+table+` SET paused_at = CASE WHEN `+pausedSQL(table)+` THEN paused_at ELSE ? END,
paused_until = ? WHERE `+where, append([]any{now, now, end}, args...)...)
		if res.Error != nil {
			return fmt.Errorf("pause: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("pause %s %d: %w", table, max(subID, userID), ErrNotFound)
		}
		if err := db.Model(&OutboxRow{}).Where(hold, holdArgs...).
			Where("(state = ? OR (state = ? AND last_error IN ?))", OutboxQueued, OutboxHeld, []string{HoldCredits, HoldBouncing}).
			UpdateColumns(map[string]any{"state": OutboxHeld, "last_error": HoldPaused}).Error; err != nil {
			return fmt.Errorf("hold email for the pause: %w", err)
		}
		return nil
	})
}

// Resume ends the pause of subscription subID of userID, or of the whole
// account when subID is 0, and queues again the email the pause held
// (unless another pause still covers it). It reports whether anything was
// paused; ErrNotFound for a subscription that is not userID's or ended.
func (s *Store) Resume(ctx context.Context, userID, subID int64) (bool, error) {
	var was bool
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		was, err = tx.resumeTx(ctx, userID, subID)
		return err
	})
	return was, err
}

// resumeTx is Resume inside its transaction.
func (s *Store) resumeTx(ctx context.Context, userID, subID int64) (bool, error) {
	db := s.DB.WithContext(ctx)
	now := s.now()
	var paused []struct{ PausedAt, PausedUntil *time.Time }
	target := func() *gorm.DB {
		if subID != 0 {
			return db.Table("subscriptions").Where("id = ? AND user_id = ? AND state <> ?", subID, userID, SubEnded)
		}
		return db.Table("users").Where("id = ? AND deleted_at IS NULL", userID)
	}
	if err := target().Select("paused_at, paused_until").Scan(&paused).Error; err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	if len(paused) == 0 {
		return false, fmt.Errorf("resume %d of user %d: %w", subID, userID, ErrNotFound)
	}
	if err := target().Updates(map[string]any{"paused_at": nil, "paused_until": nil}).Error; err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	// Release what no pause still covers: the row's subscription (if any)
	// and its account both unpaused.
	res := db.Exec(`UPDATE outbox SET state = ?, last_error = '', next_attempt_at = ?
WHERE user_id = ? AND state = ? AND last_error = ?
AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = outbox.user_id AND `+pausedSQL("u")+`)
AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = outbox.subscription_id AND `+pausedSQL("s")+`)`,
		OutboxQueued, now, userID, OutboxHeld, HoldPaused, now, now)
	if res.Error != nil {
		return false, fmt.Errorf("release email held for the pause: %w", res.Error)
	}
	return IsPaused(paused[0].PausedAt, paused[0].PausedUntil, now), nil
}

// EndPauses ends the pauses whose paused_until has passed (clearing them
// and queuing again the email they held, see Resume) and returns how many
// it ended. The mailer calls it now and then.
func (s *Store) EndPauses(ctx context.Context) (int, error) {
	now := s.now()
	db := s.DB.WithContext(ctx)
	var users []int64
	if err := db.Table("users").Where(pauseEndedSQL("users"), now).
		Order("id").Limit(500).Pluck("id", &users).Error; err != nil {
		return 0, fmt.Errorf("find ended account pauses: %w", err)
	}
	var subs []struct{ ID, UserID int64 }
	if err := db.Table("subscriptions").Select("id, user_id").Where(pauseEndedSQL("subscriptions"), now).
		Order("id").Limit(500).Scan(&subs).Error; err != nil {
		return 0, fmt.Errorf("find ended subscription pauses: %w", err)
	}
	for _, u := range users {
		if _, err := s.Resume(ctx, u, 0); err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
	}
	for _, sub := range subs {
		if _, err := s.Resume(ctx, sub.UserID, sub.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
	}
	return len(users) + len(subs), nil
}
