package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/model"
)

// LedgerEntry is one append-only change to a person's credits.
type LedgerEntry struct {
	ID             int64 `gorm:"primaryKey"`
	UserID         int64
	Kind           string
	Amount         int64
	BalanceAfter   int64
	IdempotencyKey string
	Reason         string
	CreatedAt      time.Time
}

// Line returns e as its owner sees it (the API's ledger, the export), in
// UTC.
func (e LedgerEntry) Line() model.LedgerLine {
	return model.LedgerLine{ID: e.ID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter, Reason: e.Reason,
		CreatedAt: e.CreatedAt.UTC()}
}

// The credit ledger: each change to a person's credits is one append-only
// ledger_entries row with a unique idempotency key (a replayed key changes
// nothing), and users.balance caches their sum, written in the same
// transaction with the user's row locked; it never goes below zero.
// Entries adding credits release email held for credits; grants,
// purchases and positive adjustments also start a new out-of-credits
// notice episode. The rules (kinds and signs, balance arithmetic, trial
// key) are billing's; the store applies them in its transactions.

// Ledger entry kinds (billing.EntryKind values).
const (
	LedgerGrant      = string(billing.KindGrant)      // > 0: trial credits, operator gifts
	LedgerPurchase   = string(billing.KindPurchase)   // > 0: a paid pack
	LedgerCharge     = string(billing.KindCharge)     // ≤ 0: an email sent (0: sent free)
	LedgerRefund     = string(billing.KindRefund)     // > 0: a charge given back
	LedgerAdjustment = string(billing.KindAdjustment) // ≠ 0: operator correction
)

// Ledger errors. Test with errors.Is.
var (
	// ErrInsufficientCredits: the entry would take the balance below zero.
	// Nothing was written. It is billing.ErrInsufficient.
	ErrInsufficientCredits = billing.ErrInsufficient
	// ErrBadLedgerEntry: unknown kind, zero amount, a sign the kind forbids,
	// an empty idempotency key, or a balance overflow. It is
	// billing.ErrBadEntry.
	ErrBadLedgerEntry = billing.ErrBadEntry
	// ErrKeyConflict: the idempotency key is already used by an entry for
	// another user, kind or amount (a bug in the caller's key scheme).
	ErrKeyConflict = errors.New("idempotency key already used by a different entry")
)

// TrialKey is the idempotency key of a user's trial grant (billing.KeyTrial),
// so an account gets its trial credits once.
func TrialKey(userID int64) string { return billing.KeyTrial(userID) }

// checkLedgerEntry applies billing.CheckEntry, and refuses an empty
// idempotency key.
func checkLedgerEntry(kind string, amount int64, key string) error {
	if err := billing.CheckEntry(billing.EntryKind(kind), amount); err != nil {
		return err
	}
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("%w: empty idempotency key", ErrBadLedgerEntry)
	}
	return nil
}

// episodeKinds are the kinds whose positive entries bring credits in from
// outside (not refunds): after one, running out earns a new notice.
var episodeKinds = []string{LedgerGrant, LedgerPurchase, LedgerAdjustment}

// startsNoticeEpisode reports whether an entry starts a new out-of-credits
// notice episode (see episodeKinds).
func startsNoticeEpisode(kind string, amount int64) bool {
	return amount > 0 && slices.Contains(episodeKinds, kind)
}

// LedgerResult is what PostLedgerEntry did.
type LedgerResult struct {
	Entry LedgerEntry
	// Applied is false when the key had been used before: Entry is then
	// the entry made the first time and nothing changed.
	Applied bool
	// Released counts emails moved from held (waiting for credits) back to
	// the queue by this entry.
	Released int64
}

// AddLedgerEntry appends one entry to userID's ledger and updates the
// cached balance, atomically. A key used before returns the first entry
// with applied=false and changes nothing; a charge the balance cannot cover
// fails with ErrInsufficientCredits and writes nothing. Entries adding
// credits release email held for credits (see the package notes above).
func (s *Store) AddLedgerEntry(ctx context.Context, userID int64, kind string, amount int64, idempotencyKey, reason string) (entry LedgerEntry, applied bool, err error) {
	r, err := s.PostLedgerEntry(ctx, userID, kind, amount, idempotencyKey, reason)
	return r.Entry, r.Applied, err
}

// PostLedgerEntry is AddLedgerEntry reporting also how many held emails the
// entry released.
func (s *Store) PostLedgerEntry(ctx context.Context, userID int64, kind string, amount int64, idempotencyKey, reason string) (LedgerResult, error) {
	if err := checkLedgerEntry(kind, amount, idempotencyKey); err != nil {
		return LedgerResult{}, err
	}
	var r LedgerResult
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		r, err = tx.postLedgerEntryTx(ctx, userID, kind, amount, idempotencyKey, reason)
		return err
	})
	if err != nil {
		return LedgerResult{}, fmt.Errorf("ledger %s %d for user %d (%s): %w", kind, amount, userID, idempotencyKey, err)
	}
	return r, nil
}

// GrantTrialOnce gives userID their trial credits the first time it is
// called for them (key TrialKey) and marks users.trial_granted, in one
// transaction. Later calls change nothing and return applied=false. With
// credits = 0 (trials switched off) only the flag is set.
func (s *Store) GrantTrialOnce(ctx context.Context, userID, credits int64) (entry LedgerEntry, applied bool, err error) {
	if credits < 0 {
		return LedgerEntry{}, false, fmt.Errorf("%w: trial of %d credits", ErrBadLedgerEntry, credits)
	}
	err = s.Tx(ctx, func(tx *Store) error {
		if credits > 0 {
			r, err := tx.postLedgerEntryTx(ctx, userID, LedgerGrant, credits, TrialKey(userID), "trial credits")
			if err != nil {
				return err
			}
			entry, applied = r.Entry, r.Applied
		} else if _, err := tx.ledgerLockUser(ctx, userID); err != nil {
			return err
		}
		return tx.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND NOT trial_granted", userID).
			Update("trial_granted", true).Error
	})
	if err != nil {
		return LedgerEntry{}, false, fmt.Errorf("trial credits for user %d: %w", userID, err)
	}
	return entry, applied, nil
}

// Balance returns userID's cached balance.
func (s *Store) Balance(ctx context.Context, userID int64) (int64, error) {
	var b []int64
	if err := s.DB.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Pluck("balance", &b).Error; err != nil {
		return 0, fmt.Errorf("balance of user %d: %w", userID, err)
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("balance of user %d: %w", userID, ErrNotFound)
	}
	return b[0], nil
}

// LedgerOf returns userID's most recent entries, newest first (all of them
// when limit ≤ 0).
func (s *Store) LedgerOf(ctx context.Context, userID int64, limit int) ([]LedgerEntry, error) {
	q := s.DB.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC")
	if limit > 0 {
		q = q.Limit(limit)
	}
	var out []LedgerEntry
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("ledger of user %d: %w", userID, err)
	}
	return out, nil
}

// LedgerEntryByKey returns the entry with this idempotency key, or
// ErrNotFound.
func (s *Store) LedgerEntryByKey(ctx context.Context, key string) (*LedgerEntry, error) {
	var e LedgerEntry
	if err := s.DB.WithContext(ctx).Where("idempotency_key = ?", key).Take(&e).Error; err != nil {
		return nil, fmt.Errorf("ledger entry %s: %w", key, notFound(err))
	}
	return &e, nil
}

// lockedUser is the part of a user row the ledger needs.
type lockedUser struct {
	ID      int64
	Balance int64
}

// lockUser locks userID's row until the transaction ends and returns its
// balance. It must run inside Tx.
func (s *Store) ledgerLockUser(ctx context.Context, userID int64) (int64, error) {
	var rows []lockedUser
	q := s.DB.WithContext(ctx).Model(&User{}).Select("id, balance").Where("id = ?", userID)
	if err := s.sqlDialect().lockRow(q).Scan(&rows).Error; err != nil {
		return 0, fmt.Errorf("lock user %d: %w", userID, err)
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("user %d: %w", userID, ErrNotFound)
	}
	return rows[0].Balance, nil
}

// lockUsers locks several user rows in id order (so two transactions never
// wait on each other in a cycle) and returns their balances.
func (s *Store) ledgerLockUsers(ctx context.Context, ids []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []lockedUser
	d := s.sqlDialect()
	cond, arg := d.idsIn("id", ids)
	q := s.DB.WithContext(ctx).Model(&User{}).Select("id, balance").Where(cond, arg).Order("id")
	if err := d.lockRow(q).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("lock users: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Balance
	}
	return out, nil
}

// postLedgerEntryTx does PostLedgerEntry's work inside an open transaction.
func (s *Store) postLedgerEntryTx(ctx context.Context, userID int64, kind string, amount int64, key, reason string) (LedgerResult, error) {
	if err := checkLedgerEntry(kind, amount, key); err != nil {
		return LedgerResult{}, err
	}
	balance, err := s.ledgerLockUser(ctx, userID)
	if err != nil {
		return LedgerResult{}, err
	}
	db := s.DB.WithContext(ctx)
	var prior []LedgerEntry
	if err := db.Where("idempotency_key = ?", key).Limit(1).Find(&prior).Error; err != nil {
		return LedgerResult{}, fmt.Errorf("look up key: %w", err)
	}
	if len(prior) == 1 {
		p := prior[0]
		if p.UserID != userID || p.Kind != kind || p.Amount != amount {
			return LedgerResult{}, fmt.Errorf("%w: %q is user %d's %s of %d", ErrKeyConflict, key, p.UserID, p.Kind, p.Amount)
		}
		return LedgerResult{Entry: p}, nil
	}
	next, err := applyAmount(balance, amount)
	if err != nil {
		return LedgerResult{}, err
	}
	now := s.now()
	e := LedgerEntry{UserID: userID, Kind: kind, Amount: amount, BalanceAfter: next, IdempotencyKey: key,
		Reason: reason, CreatedAt: now}
	if err := db.Create(&e).Error; err != nil {
		return LedgerResult{}, fmt.Errorf("insert entry: %w", err)
	}
	if err := db.Model(&User{}).Where("id = ?", userID).Update("balance", next).Error; err != nil {
		return LedgerResult{}, fmt.Errorf("update balance: %w", err)
	}
	r := LedgerResult{Entry: e, Applied: true}
	if amount > 0 {
		left := 0
		if r.Released, left, err = s.releaseHeldForCredits(ctx, userID, next); err != nil {
			return LedgerResult{}, err
		}
		if startsNoticeEpisode(kind, amount) {
			if err := s.rearmLow(ctx, userID, next); err != nil {
				return LedgerResult{}, err
			}
		}
		// The shortage the person was told about ends only when nothing
		// waits any more: a top-up that pays for part of the held mail
		// brings no second "credits ran out" right after it.
		if startsNoticeEpisode(kind, amount) && left == 0 {
			if err := db.Model(&User{}).Where("id = ?", userID).Update("credit_notice_at", nil).Error; err != nil {
				return LedgerResult{}, fmt.Errorf("end credit notice: %w", err)
			}
		}
	}
	return r, nil
}

// releaseHeldForCredits moves userID's email held for credits back to the
// queue, oldest first, as much of it as balance pays for; it returns how
// many rows it released and how many still wait.
func (s *Store) releaseHeldForCredits(ctx context.Context, userID, balance int64) (released int64, left int, err error) {
	var held []OutboxRow
	if err := s.DB.WithContext(ctx).Select("id", "credits").
		Where("user_id = ? AND state = ? AND last_error = ?", userID, OutboxHeld, HoldCredits).
		Order("created_at, id").Find(&held).Error; err != nil {
		return 0, 0, fmt.Errorf("held email of user %d: %w", userID, err)
	}
	var ids []int64
	for _, h := range held {
		if int64(h.Credits) > balance {
			break
		}
		balance -= int64(h.Credits)
		ids = append(ids, h.ID)
	}
	if len(ids) == 0 {
		return 0, len(held), nil
	}
	res := s.DB.WithContext(ctx).Model(&OutboxRow{}).Where("id IN ? AND state = ?", ids, OutboxHeld).
		UpdateColumns(map[string]any{"state": OutboxQueued, "next_attempt_at": s.now(), "last_error": ""})
	if res.Error != nil {
		return 0, 0, fmt.Errorf("release held email of user %d: %w", userID, res.Error)
	}
	return res.RowsAffected, len(held) - len(ids), nil
}

// applyAmount is billing.Apply, with an overflow reported as a bad entry
// (ErrBadLedgerEntry): the balance stays within zero and the int64 range.
func applyAmount(balance, amount int64) (int64, error) {
	next, err := billing.Apply(balance, amount)
	if errors.Is(err, billing.ErrOverflow) {
		return balance, fmt.Errorf("%w: %w", ErrBadLedgerEntry, err)
	}
	return next, err
}

// releaseHeld moves userID's emails held for reason back to the queue, due
// now.
func (s *Store) releaseHeld(ctx context.Context, userID int64, reason string) (int64, error) {
	res := s.DB.WithContext(ctx).Model(&OutboxRow{}).Where("user_id = ? AND state = ? AND last_error = ?", userID, OutboxHeld, reason).
		UpdateColumns(map[string]any{"state": OutboxQueued, "next_attempt_at": s.now(), "last_error": ""})
	if res.Error != nil {
		return 0, fmt.Errorf("release held email of user %d: %w", userID, res.Error)
	}
	return res.RowsAffected, nil
}

// noticeEpisode identifies the current out-of-credits episode of userID:
// the id of their latest grant, purchase or positive adjustment (0 when
// there is none). It changes only when credits arrive from outside.
func (s *Store) noticeEpisode(ctx context.Context, userID int64) (int64, error) {
	var ids []int64
	err := s.DB.WithContext(ctx).Model(&LedgerEntry{}).
		Where("user_id = ? AND amount > 0 AND kind IN ?", userID, episodeKinds).
		Order("id DESC").Limit(1).Pluck("id", &ids).Error
	if err != nil {
		return 0, fmt.Errorf("notice episode of user %d: %w", userID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return ids[0], nil
}
