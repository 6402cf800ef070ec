package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm/clause"
)

// Purchase is a Stripe Checkout session for a credit pack.
type Purchase struct {
	ID              int64 `gorm:"primaryKey"`
	UserID          int64
	Credits         int64
	PriceCents      int64
	Currency        string
	StripeSessionID string
	State           string
	CreatedAt       time.Time
	CompletedAt     *time.Time
}

// PaymentEvent records a processed webhook event id so replays do nothing.
type PaymentEvent struct {
	EventID    string `gorm:"primaryKey"`
	Type       string
	SessionID  string
	ReceivedAt time.Time
}

// Purchases: one row per Stripe Checkout Session for a credit pack, made
// when the session is created, and the webhook events that settle it.
//
// A pack is granted at most once per purchase, whatever Stripe sends: each
// event id is recorded in payment_events once (a replayed or duplicated
// event finds its id there and does nothing), and the grant's ledger key is
// "purchase:<session>" (billing.KeyPurchase), so two different events for
// one session — completed and async_payment_succeeded, in either order —
// grant once. The event, the grant and the purchase's state are written in
// one transaction.

// Purchase states.
const (
	PurchasePending = "pending" // session created, not paid yet
	PurchasePaid    = "paid"    // credits granted
	PurchaseExpired = "expired" // the session expired unpaid
	PurchaseFailed  = "failed"  // a delayed payment failed
)

// CreatePurchase records a new Checkout Session for a pack bought by user.
func (s *Store) CreatePurchase(ctx context.Context, userID, credits, priceCents int64, currency, sessionID string) (*Purchase, error) {
	if strings.TrimSpace(sessionID) == "" || credits <= 0 || priceCents <= 0 {
		return nil, fmt.Errorf("create purchase: need a session id and a positive pack (%d credits for %d)", credits, priceCents)
	}
	p := Purchase{UserID: userID, Credits: credits, PriceCents: priceCents, Currency: strings.ToLower(currency),
		StripeSessionID: sessionID, State: PurchasePending, CreatedAt: s.now()}
	if err := s.DB.WithContext(ctx).Create(&p).Error; err != nil {
		return nil, fmt.Errorf("create purchase for session %s: %w", sessionID, err)
	}
	return &p, nil
}

// PurchaseBySession looks a purchase up by its Checkout Session id.
func (s *Store) PurchaseBySession(ctx context.Context, sessionID string) (*Purchase, error) {
	var p Purchase
	if err := s.DB.WithContext(ctx).Where("stripe_session_id = ?", sessionID).Take(&p).Error; err != nil {
		return nil, fmt.Errorf("purchase %s: %w", sessionID, notFound(err))
	}
	return &p, nil
}

// PaymentEventResult is what SettlePurchase did with one webhook event.
type PaymentEventResult struct {
	Purchase Purchase
	// Duplicate: this event id was processed before; nothing changed.
	Duplicate bool
	// Granted: this event granted the pack (false when it had been granted
	// already, by another event for the same session).
	Granted bool
	// Entry is the purchase's ledger entry (the first one, when it was
	// granted before); zero when nothing has been granted.
	Entry LedgerEntry
	// Released counts held emails the grant sent back to the queue.
	Released int64
}

// PaymentEventInput describes one verified webhook event about a purchase.
type PaymentEventInput struct {
	EventID, Type, SessionID string
	// Grant: the event says the session is paid. The pack is granted
	// under LedgerKey unless it was granted before.
	Grant     bool
	LedgerKey string
	// EndState, for events that do not grant: the state a still-pending
	// purchase moves to (PurchaseExpired, PurchaseFailed), or "" for none.
	// A paid purchase never leaves PurchasePaid.
	EndState string
	// Receipt, when set, builds the receipt of a grant this event makes:
	// it is queued in the grant's transaction, so a purchase gets one
	// receipt and a replayed event none.
	Receipt func(p Purchase, e LedgerEntry) (dedupeKey string, n Notice)
}

// SettlePurchase applies one verified webhook event to its purchase, in one
// transaction: the event id is recorded (a second delivery of it changes
// nothing: Duplicate), then a paying event grants the pack once, marks the
// purchase paid and releases held email; a failing or expiring event moves
// a pending purchase to its end state. An unknown session fails with
// ErrNotFound and records nothing, so that the sender may retry.
func (s *Store) SettlePurchase(ctx context.Context, in PaymentEventInput) (PaymentEventResult, error) {
	if in.EventID == "" || in.SessionID == "" {
		return PaymentEventResult{}, errors.New("settle purchase: event and session ids are required")
	}
	if in.Grant && in.LedgerKey == "" {
		return PaymentEventResult{}, errors.New("settle purchase: a grant needs a ledger key")
	}
	var r PaymentEventResult
	err := s.Tx(ctx, func(tx *Store) error {
		r = PaymentEventResult{}
		db := tx.DB.WithContext(ctx)
		q := tx.sqlDialect().lockRow(db.Where("stripe_session_id = ?", in.SessionID))
		if err := q.Take(&r.Purchase).Error; err != nil {
			return fmt.Errorf("purchase for session %s: %w", in.SessionID, notFound(err))
		}
		now := tx.now()
		ins := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&PaymentEvent{EventID: in.EventID, Type: in.Type,
			SessionID: in.SessionID, ReceivedAt: now})
		if ins.Error != nil {
			return fmt.Errorf("record event %s: %w", in.EventID, ins.Error)
		}
		if ins.RowsAffected == 0 {
			r.Duplicate = true
			return tx.loadPurchaseEntry(ctx, in.LedgerKey, &r)
		}
		p := &r.Purchase
		switch {
		case in.Grant:
			lr, err := tx.postLedgerEntryTx(ctx, p.UserID, LedgerPurchase, p.Credits, in.LedgerKey,
				fmt.Sprintf("bought %d credits (%s)", p.Credits, in.SessionID))
			if err != nil {
				return err
			}
			r.Granted, r.Entry, r.Released = lr.Applied, lr.Entry, lr.Released
			if err := tx.queueReceipt(ctx, in, *p, lr); err != nil {
				return err
			}
			if p.State != PurchasePaid {
				if err := db.Model(&Purchase{}).Where("id = ?", p.ID).
					Updates(map[string]any{"state": PurchasePaid, "completed_at": now}).Error; err != nil {
					return fmt.Errorf("mark purchase %d paid: %w", p.ID, err)
				}
				p.State, p.CompletedAt = PurchasePaid, &now
			}
		case in.EndState != "" && p.State == PurchasePending:
			if err := db.Model(&Purchase{}).Where("id = ? AND state = ?", p.ID, PurchasePending).
				Updates(map[string]any{"state": in.EndState, "completed_at": now}).Error; err != nil {
				return fmt.Errorf("end purchase %d: %w", p.ID, err)
			}
			p.State, p.CompletedAt = in.EndState, &now
		default:
			return tx.loadPurchaseEntry(ctx, in.LedgerKey, &r)
		}
		return nil
	})
	if err != nil {
		return PaymentEventResult{}, fmt.Errorf("payment event %s (%s): %w", in.EventID, in.Type, err)
	}
	return r, nil
}

// loadPurchaseEntry fills r.Entry with the grant made under key, if any.
func (s *Store) loadPurchaseEntry(ctx context.Context, key string, r *PaymentEventResult) error {
	if key == "" {
		return nil
	}
	var es []LedgerEntry
	if err := s.DB.WithContext(ctx).Where("idempotency_key = ?", key).Limit(1).Find(&es).Error; err != nil {
		return fmt.Errorf("look up %s: %w", key, err)
	}
	if len(es) == 1 {
		r.Entry = es[0]
	}
	return nil
}

// queueReceipt queues the receipt of a grant lr just made (none when it
// was made before, or without in.Receipt).
func (s *Store) queueReceipt(ctx context.Context, in PaymentEventInput, p Purchase, lr LedgerResult) error {
	if !lr.Applied || in.Receipt == nil {
		return nil
	}
	key, n := in.Receipt(p, lr.Entry)
	if _, err := s.QueueNotice(ctx, p.UserID, key, n); err != nil {
		return fmt.Errorf("receipt of purchase %d: %w", p.ID, err)
	}
	return nil
}
