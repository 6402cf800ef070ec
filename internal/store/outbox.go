package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/model"
)

// Outbox kinds.
const (
	KindItem   = "item"
	KindDigest = "digest"
	KindNotice = "notice"
)

// Outbox states.
const (
	OutboxQueued  = "queued"
	OutboxHeld    = "held" // waiting for credits or for a bouncing address
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
	OutboxExpired = "expired" // waited for credits for too long
)

// OutboxRow is one delivery to make, by email or by another channel
// (Channel). DedupeKey makes queueing idempotent.
type OutboxRow struct {
	ID             int64 `gorm:"primaryKey"`
	Kind           string
	DedupeKey      string
	UserID         int64
	SubscriptionID *int64
	ItemID         *int64
	IssueID        *int64
	// Address is the email address of the person the row is for, copied
	// when it is queued: email goes to it ("" for their current one);
	// other channels go to their subscription's or digest's target and
	// keep it only to name the person.
	Address string `gorm:"column:to_addr"`
	Credits int
	// FreeReason says why a row of 0 credits is free ("burst: free"): its
	// ledger line, written when it is sent, carries it. "" otherwise.
	FreeReason    string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseOwner    string
	LeaseUntil    *time.Time
	LastError     string
	MessageID     string
	Payload       string
	CreatedAt     time.Time
	SentAt        *time.Time
	// BlockedSince is when the destination first turned this email away,
	// or it was first put back, for the sender's sake (see
	// mail_destinations.go); nil otherwise.
	BlockedSince *time.Time
	// Channel is the channel the row goes out by (model.ChannelEmail for
	// email; see Subscription.Channel), copied when it is queued.
	Channel string `gorm:"not null;default:email"`
}

// TableName keeps the table name short.
func (OutboxRow) TableName() string { return "outbox" }

// The outbox: what the mailer's worker does with the rows it claimed
// (outbox_claims.go). Every write is guarded by lease_owner and state =
// 'queued', so a worker whose lease ran out changes nothing. A held row
// waits in state "held" with a Hold* reason in last_error until credits,
// ClearBouncing or the end of a pause (pause.go) release it, or ExpireHeld
// ends it. Multi-table
// transactions lock the user row first and the outbox rows after, so two
// of them never wait on each other in a cycle.

// Hold reasons, stored in last_error of a held row.
const (
	HoldCredits  = "held: waiting for credits"
	HoldBouncing = "held: address is bouncing"
	HoldPaused   = "held: the reader paused delivery"
)

// SentMark is one row accepted by the transport.
type SentMark struct {
	ID        int64
	UserID    int64
	MessageID string
	// Channel is the row's channel; "" is email.
	Channel string
	// NoBounces says the recipient had no hard bounce counted when the row
	// was claimed, so the acceptance has no count to reset and the
	// statement is skipped (most marks: the reset then costs nothing). A
	// bounce recorded between that claim and this mark stays counted.
	NoBounces bool
}

// MarkOutboxSent records accepted rows as sent, with their Message-IDs,
// and returns how many owner still held: one statement of the same text
// whatever the number of rows (on Postgres). Accepted email also resets
// its recipients' count of consecutive hard bounces (a delivery by another
// channel says nothing of the address).
func (s *Store) MarkOutboxSent(ctx context.Context, owner string, marks []SentMark) (int64, error) {
	if len(marks) == 0 {
		return 0, nil
	}
	c := s.psConn(ctx)
	now := s.now()
	var total int64
	for start, chunk := 0, s.psChunkOf(len(marks)); start < len(marks); start += chunk {
		part := marks[start:min(start+chunk, len(marks))]
		ids, msgIDs := make([]int64, len(part)), make([]string, len(part))
		for i, m := range part {
			ids[i], msgIDs[i] = m.ID, m.MessageID
		}
		q := s.psNew().psRowsV(sentCols, []any{ids, msgIDs}, len(part)).sql("\nUPDATE outbox SET state = ").arg(OutboxSent, "text").
			sql(", sent_at = ").arg(now, "timestamptz").
			sql(", attempts = attempts + 1, lease_owner = '', lease_until = NULL, last_error = '', message_id = v.message_id"+
				"\nFROM v WHERE outbox.id = v.id AND outbox.lease_owner = ").arg(owner, "text").
			sql(" AND outbox.state = ").arg(OutboxQueued, "text")
		n, err := q.exec(ctx, c)
		if err != nil {
			return total, fmt.Errorf("mark sent: %w", err)
		}
		total += n
	}
	users := map[int64]bool{}
	for _, m := range marks {
		if (m.Channel == "" || m.Channel == model.ChannelEmail) && !m.NoBounces {
			users[m.UserID] = true
		}
	}
	if len(users) == 0 {
		return total, nil
	}
	// Outside any transaction on purpose: the user row is locked after the
	// outbox rows only in statements of their own (see the notes above).
	cond, arg := s.sqlDialect().idsIn("id", outboxSortedKeys(users))
	if err := s.DB.WithContext(ctx).Model(&User{}).Where(cond, arg).Where("hard_bounces > 0").
		UpdateColumn("hard_bounces", 0).Error; err != nil {
		return total, fmt.Errorf("reset bounces: %w", err)
	}
	return total, nil
}

// sentCols are the per-row values of MarkOutboxSent.
var sentCols = []psCol{{"id", "bigint"}, {"message_id", "text"}}

// RetryOutbox puts a row owner holds back in the queue, due at next, after
// a failed attempt (attempts + 1, the failure kept in last_error). It
// reports whether owner still held the row.
func (s *Store) RetryOutbox(ctx context.Context, owner string, id int64, next time.Time, lastErr string) (bool, error) {
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, attempts = attempts + 1, last_error = ?,
  lease_owner = '', lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = ?`,
		utc(next), outboxClip(lastErr), id, owner, OutboxQueued)
	if res.Error != nil {
		return false, fmt.Errorf("retry outbox %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// HoldOutbox holds a row owner holds, for reason (one of the Hold*
// constants). It reports whether owner still held the row.
func (s *Store) HoldOutbox(ctx context.Context, owner string, id int64, reason string) (bool, error) {
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET state = ?, last_error = ?, lease_owner = '', lease_until = NULL
WHERE id = ? AND lease_owner = ? AND state = ?`, OutboxHeld, reason, id, owner, OutboxQueued)
	if res.Error != nil {
		return false, fmt.Errorf("hold outbox %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Failure describes a row that will not be sent.
type Failure struct {
	Owner  string
	Row    *OutboxRow
	Reason string // kept in last_error
	// HardBounce counts the failure against the address (SMTP 5xx); at
	// BounceLimit consecutive ones the address is marked bouncing.
	HardBounce  bool
	BounceLimit int
}

// FailResult is what FailOutbox did.
type FailResult struct {
	Failed      bool  // false: owner no longer held the row; nothing changed
	Refunded    bool  // a charge was given back
	NowBouncing bool  // this failure marked the address bouncing
	Held        int64 // queued rows held because the address is now bouncing
}

// FailOutbox marks a row failed, in one transaction with its refund (if it
// was charged, under its billing keys, and so are the owners' charges for
// the same email: billing.OwnerChargeRange) and, for a hard bounce, the address's bounce count; the
// failure that reaches the limit marks the address bouncing
// (users.bouncing_since) and holds the person's queued email of posts that
// no worker holds (bounce_hold.go).
func (s *Store) FailOutbox(ctx context.Context, f Failure) (FailResult, error) {
	var r FailResult
	charge, refund := outboxKeys(f.Row)
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.lockForRefund(ctx, f.Row.UserID, charge); err != nil {
			return err
		}
		db := tx.DB.WithContext(ctx)
		res := db.Exec(`UPDATE outbox SET state = ?, last_error = ?, attempts = attempts + 1, lease_owner = '', lease_until = NULL
WHERE id = ? AND lease_owner = ? AND state = ?`, OutboxFailed, outboxClip(f.Reason), f.Row.ID, f.Owner, OutboxQueued)
		if res.Error != nil {
			return fmt.Errorf("mark failed: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		r.Failed = true
		var err error
		if r.Refunded, err = tx.refundIfCharged(ctx, charge, refund,
			"refund: "+f.Row.Kind+" email "+f.Row.DedupeKey+" failed"); err != nil {
			return err
		}
		if !f.HardBounce {
			return nil
		}
		r.NowBouncing, r.Held, err = tx.countHardBounce(ctx, f.Row.UserID, f.BounceLimit)
		return err
	})
	if err != nil {
		return FailResult{}, fmt.Errorf("fail outbox %d: %w", f.Row.ID, err)
	}
	return r, nil
}

// countHardBounce counts one hard bounce against userID's address, inside
// the caller's transaction (which holds the user's ledger lock). The one
// that reaches limit marks the address bouncing (users.bouncing_since) and
// holds the person's queued rows that no worker holds and the bounce hold
// (bounce_hold.go) says wait: their email of posts, paid or free, not
// their notices nor their deliveries by other channels; it returns whether
// this bounce did so and how many emails it held.
func (s *Store) countHardBounce(ctx context.Context, userID int64, limit int) (nowBouncing bool, held int64, err error) {
	db := s.DB.WithContext(ctx)
	if err := db.Exec(`UPDATE users SET hard_bounces = hard_bounces + 1 WHERE id = ?`, userID).Error; err != nil {
		return false, 0, fmt.Errorf("count bounce: %w", err)
	}
	res := db.Model(&User{}).Where("id = ? AND bouncing_since IS NULL AND hard_bounces >= ?", userID, max(limit, 1)).
		UpdateColumn("bouncing_since", s.now())
	if res.Error != nil {
		return false, 0, fmt.Errorf("mark bouncing: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, 0, nil
	}
	res = db.Exec(`UPDATE outbox SET state = ?, last_error = ?
WHERE user_id = ? AND state = ? AND (lease_until IS NULL OR lease_until <= ?)
AND EXISTS (SELECT 1 FROM users u WHERE u.id = outbox.user_id AND `+bounceHoldSQL("outbox.kind", "outbox.channel", "u.bouncing_since")+`)`,
		OutboxHeld, HoldBouncing, userID, OutboxQueued, s.now())
	if res.Error != nil {
		return true, 0, fmt.Errorf("hold for bouncing: %w", res.Error)
	}
	return true, res.RowsAffected, nil
}

// ClearBouncing takes the bouncing mark off userID's address (the person
// proved it works again, e.g. by confirming a subscription): the bounce
// count is zeroed and email held for the bouncing address goes back to the
// queue. It returns how many emails were released.
func (s *Store) ClearBouncing(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.Tx(ctx, func(tx *Store) error {
		if _, err := tx.ledgerLockUser(ctx, userID); err != nil {
			return err
		}
		if err := tx.DB.WithContext(ctx).Model(&User{}).Where("id = ?", userID).
			UpdateColumns(map[string]any{"hard_bounces": 0, "bouncing_since": nil}).Error; err != nil {
			return err
		}
		var err error
		n, err = tx.releaseHeld(ctx, userID, HoldBouncing)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear bouncing of user %d: %w", userID, err)
	}
	return n, nil
}

// ExpireHeld ends held rows queued more than holdFor before now (state
// "expired"), refunding any that an earlier attempt had charged, and returns
// them. At most limit rows per call.
func (s *Store) ExpireHeld(ctx context.Context, now time.Time, holdFor time.Duration, limit int) ([]OutboxRow, error) {
	var due []OutboxRow
	if err := s.DB.WithContext(ctx).Where("state = ? AND created_at <= ?", OutboxHeld, utc(now.Add(-holdFor))).
		Order("id").Limit(limit).Find(&due).Error; err != nil {
		return nil, fmt.Errorf("find expired held email: %w", err)
	}
	var out []OutboxRow
	for i := range due {
		row := &due[i]
		expired := false
		err := s.Tx(ctx, func(tx *Store) error {
			charge, refund := outboxKeys(row)
			if err := tx.lockForRefund(ctx, row.UserID, charge); err != nil {
				return err
			}
			res := tx.DB.WithContext(ctx).Model(&OutboxRow{}).Where("id = ? AND state = ?", row.ID, OutboxHeld).
				UpdateColumns(map[string]any{"state": OutboxExpired, "last_error": outboxClip("expired: " + row.LastError)})
			if res.Error != nil {
				return res.Error
			}
			expired = res.RowsAffected == 1
			if !expired || charge == "" {
				return nil
			}
			_, err := tx.refundIfCharged(ctx, charge, refund, "refund: "+row.Kind+" email "+row.DedupeKey+" expired")
			return err
		})
		if err != nil {
			return out, fmt.Errorf("expire outbox %d: %w", row.ID, err)
		}
		if expired {
			row.State = OutboxExpired
			out = append(out, *row)
		}
	}
	return out, nil
}

// OutboxDepths counts queued and held email, for the queue-depth gauges
// ("outbox" and "held").
func (s *Store) OutboxDepths(ctx context.Context) (map[string]int64, error) {
	type row struct {
		State string
		N     int64
	}
	var rows []row
	if err := s.DB.WithContext(ctx).Raw(`SELECT state, COUNT(*) AS n FROM outbox WHERE state IN (?, ?) GROUP BY state`,
		OutboxQueued, OutboxHeld).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("outbox depths: %w", err)
	}
	out := map[string]int64{"outbox": 0, "held": 0}
	for _, r := range rows {
		if r.State == OutboxQueued {
			out["outbox"] = r.N
		} else {
			out["held"] = r.N
		}
	}
	return out, nil
}

// OutboxByID looks an outbox row up.
func (s *Store) OutboxByID(ctx context.Context, id int64) (*OutboxRow, error) {
	var r OutboxRow
	if err := s.DB.WithContext(ctx).Take(&r, id).Error; err != nil {
		return nil, fmt.Errorf("outbox %d: %w", id, notFound(err))
	}
	return &r, nil
}

// clip keeps an error text within reason for a column.
func outboxClip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 1000 {
		return s
	}
	cut := 1000
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func outboxUniq(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func outboxSortedKeys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
