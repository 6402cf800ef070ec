package store

import (
	"context"
	"fmt"
	"time"
)

// The running-low warning (rules in billing: LowLine, LowLineRecheck).
// users.low_line is the balance under which a reader is running low, as
// last computed from their forecast; users.low_line_due is when to compute
// it again (NULL: never computed); users.low_notice_at is when the notice
// of the current fall below the line was queued (NULL: armed).
//
// The check is cheap: after a charge, WarnRunningLow compares the charged
// readers' balances with their stored lines (one indexed read by id); the
// forecast runs only in the periodic pass that claims due lines
// (ClaimLowLines) and writes them (SetLowLines), due again after
// billing.LowLineRecheck (spread per reader) or at once when the reader's subscriptions change
// (lowLineStale). Exactly once: the notice is
// queued in the transaction that flips low_notice_at from NULL, under a
// dedupe key per notice episode. Credits arriving from outside (a grant,
// a purchase, a positive adjustment) that lift the balance to the line or
// above arm it again (see postLedgerEntryTx); a refund does not, so an
// email given back cannot make the warning flap.

// LowNotice builds the running-low notice for userID in notice episode
// episode, with their balance and line: its dedupe key and content.
type LowNotice func(userID, episode, balance, line int64) (dedupeKey string, n Notice)

// lowWhere selects the readers to warn: below a line, armed, not told
// already that they ran out, not deleted.
const lowWhere = `low_line > 0 AND balance < low_line AND low_notice_at IS NULL
 AND credit_notice_at IS NULL AND deleted_at IS NULL`

// WarnRunningLow queues the running-low notice of each of userIDs that is
// below their line and armed, once per fall, and returns how many it
// queued. The read is one query by id, so calling it after every charge
// costs little.
func (s *Store) WarnRunningLow(ctx context.Context, userIDs []int64, notice LowNotice) (int, error) {
	if len(userIDs) == 0 || notice == nil {
		return 0, nil
	}
	var due []int64
	cond, arg := s.sqlDialect().idsIn("id", userIDs)
	if err := s.DB.WithContext(ctx).Model(&User{}).Where(cond+" AND "+lowWhere, arg).
		Order("id").Pluck("id", &due).Error; err != nil {
		return 0, fmt.Errorf("running low: look up readers: %w", err)
	}
	n := 0
	for _, id := range due {
		ok, err := s.warnLowOne(ctx, id, notice)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// warnLowOne disarms userID and queues their notice in one transaction,
// unless another process did first (then it reports false).
func (s *Store) warnLowOne(ctx context.Context, userID int64, notice LowNotice) (bool, error) {
	queued := false
	err := s.Tx(ctx, func(tx *Store) error {
		balance, err := tx.ledgerLockUser(ctx, userID)
		if err != nil {
			return err
		}
		res := tx.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND "+lowWhere, userID).
			UpdateColumn("low_notice_at", utc(tx.now()))
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var line []int64
		if err := tx.DB.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Pluck("low_line", &line).Error; err != nil || len(line) == 0 {
			return fmt.Errorf("line of user %d: %w", userID, err)
		}
		ep, err := tx.noticeEpisode(ctx, userID)
		if err != nil {
			return err
		}
		key, n := notice(userID, ep, balance, line[0])
		queued, err = tx.QueueNotice(ctx, userID, key, n)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("running low: warn user %d: %w", userID, err)
	}
	return queued, nil
}

// ClaimLowLines takes up to limit readers whose line is due at now (never
// computed first) and moves their due time to now+lease, so that another
// process does not compute the same lines meanwhile. It returns their ids.
func (s *Store) ClaimLowLines(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]int64, error) {
	var ids []int64
	err := s.DB.WithContext(ctx).Raw(`UPDATE users SET low_line_due = ?
WHERE `+s.sqlDialect().idInSelect(`SELECT id FROM users WHERE deleted_at IS NULL AND (low_line_due IS NULL OR low_line_due <= ?)
  ORDER BY low_line_due, id LIMIT ?`)+`
  AND (low_line_due IS NULL OR low_line_due <= ?)
RETURNING id`, utc(now.Add(lease)), utc(now), limit, utc(now)).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("claim running-low lines: %w", err)
	}
	return ids, nil
}

// LowLineUpdate is one reader's newly computed line and when it is due
// again.
type LowLineUpdate struct {
	UserID, Line int64
	Due          time.Time
}

// SetLowLines records the lines of a pass in one transaction (one commit
// for the batch, not one per reader).
func (s *Store) SetLowLines(ctx context.Context, lines []LowLineUpdate) error {
	for _, l := range lines {
		if l.Line < 0 {
			return fmt.Errorf("running-low line %d of user %d: must not be negative", l.Line, l.UserID)
		}
	}
	err := s.Tx(ctx, func(tx *Store) error {
		for _, l := range lines {
			if err := tx.DB.WithContext(ctx).Model(&User{}).Where("id = ?", l.UserID).
				UpdateColumns(map[string]any{"low_line": l.Line, "low_line_due": utc(l.Due)}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set running-low lines: %w", err)
	}
	return nil
}

// rearmLow arms userID's running-low warning again when balance (their
// new balance, after credits from outside) is at their line or above. It
// runs inside Tx with the user locked.
func (s *Store) rearmLow(ctx context.Context, userID, balance int64) error {
	err := s.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND low_notice_at IS NOT NULL AND low_line <= ?", userID, balance).
		UpdateColumn("low_notice_at", nil).Error
	if err != nil {
		return fmt.Errorf("arm running-low warning of user %d: %w", userID, err)
	}
	return nil
}

// lowLineStale makes userID's line due now: what they subscribe to, or
// how, changed, and so does their rate. Subscribing and confirming call
// it in their transactions, so a reader who adds many feeds is measured
// again within a minute, not a week later.
func (s *Store) lowLineStale(ctx context.Context, userID int64) error {
	now := utc(s.now())
	err := s.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND low_line_due > ?", userID, now).
		UpdateColumn("low_line_due", now).Error
	if err != nil {
		return fmt.Errorf("running-low line of user %d: %w", userID, err)
	}
	return nil
}

// lowLinesStaleOfFeed is lowLineStale for every reader of feedID: who pays
// for the feed changed (its publisher started or stopped), and with it
// what each of them is forecast to spend.
func (s *Store) lowLinesStaleOfFeed(ctx context.Context, feedID int64) error {
	now := utc(s.now())
	err := s.DB.WithContext(ctx).Exec(`UPDATE users SET low_line_due = ?
WHERE id IN (SELECT user_id FROM subscriptions WHERE feed_id = ? AND state <> ?) AND low_line_due > ?`,
		now, feedID, SubEnded, now).Error
	if err != nil {
		return fmt.Errorf("running-low lines of feed %d's readers: %w", feedID, err)
	}
	return nil
}
