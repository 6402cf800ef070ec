package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// AccountExport is everything feedmail keeps about one person, as their
// data export (`feedmail account export` and the account page's download)
// writes it in JSON. Times are UTC.
type AccountExport struct {
	Email         string               `json:"email"`
	Timezone      string               `json:"timezone"`
	CreatedAt     time.Time            `json:"created_at"`
	ConfirmedAt   *time.Time           `json:"confirmed_at"`
	Balance       int64                `json:"balance"`
	Paused        *ExportPause         `json:"paused,omitempty"` // the whole account
	ExportedAt    time.Time            `json:"exported_at"`
	Subscriptions []ExportSubscription `json:"subscriptions"`
	Digests       []ExportDigest       `json:"digests"`
	Ledger        []ExportLedgerEntry  `json:"ledger"`
	Purchases     []ExportPurchase     `json:"purchases"`
	// Delivery is what the mail system said about mail to the address:
	// the bounce counts and every report feedmail recorded.
	Delivery ExportDelivery `json:"delivery"`
	// Publisher is what the person does as a feed's publisher: the feeds
	// they pay for and their claims (omitted when none).
	Publisher *ExportPublisher `json:"publisher,omitempty"`
	// APITokens are the person's JSON API tokens (never the tokens
	// themselves, which are not kept).
	APITokens []ExportAPIToken `json:"api_tokens"`
}

// ExportAPIToken is one API token: its name, when it was made, last used
// and revoked.
type ExportAPIToken struct {
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// ExportDelivery is the address's bounce state and the reports (bounces,
// complaints, unsubscribes by email) recorded about mail sent to it.
type ExportDelivery struct {
	HardBounces   int            `json:"hard_bounces"`
	SoftBounces   int            `json:"soft_bounces"`
	BouncingSince *time.Time     `json:"bouncing_since,omitempty"`
	Reports       []ExportReport `json:"reports"`
}

// ExportReport is one recorded report: its kind ("bounce", "complaint",
// "unsubscribe"), a bounce's severity, cause and whose problem it was, its
// status, the reporting system's words, and when it arrived.
type ExportReport struct {
	Kind       string    `json:"kind"`
	Severity   string    `json:"severity,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Party      string    `json:"party,omitempty"`
	Status     string    `json:"status,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
}

// ExportSubscription is one subscription, ended ones included, with the
// proof of consent: when it was asked for, and when and how confirmed.
type ExportSubscription struct {
	FeedURL   string `json:"feed_url"`
	FeedTitle string `json:"feed_title"`
	State     string `json:"state"`
	// Delivery is "instant" or "digest" (then Digest names it).
	Delivery string `json:"delivery"`
	Digest   string `json:"digest,omitempty"`
	Folder   string `json:"folder,omitempty"`
	// Include, Exclude and Format are the reader's controls: the filters'
	// terms ("" for none) and how emails show a post.
	Include     string     `json:"include"`
	Exclude     string     `json:"exclude"`
	Format      string     `json:"format"`
	CreatedAt   time.Time  `json:"created_at"`
	RequestedAt *time.Time `json:"requested_at"`
	ConfirmedAt *time.Time `json:"confirmed_at"`
	// ConfirmedBy is "link", "operator", "account" (ConfirmedBy*), "" while
	// not confirmed, or "unrecorded" for one confirmed before feedmail kept
	// the how.
	ConfirmedBy string       `json:"confirmed_by"`
	EndedAt     *time.Time   `json:"ended_at,omitempty"`
	EndedReason string       `json:"ended_reason,omitempty"`
	Paused      *ExportPause `json:"paused,omitempty"`
	// Channel is where its posts go (channels.go).
	Channel ExportChannel `json:"channel"`
}

// ExportChannel is a channel and its target. A secret (a webhook's
// signing secret, an access token) is never exported, only that one is
// set: the account page shows a webhook's secret to its owner.
type ExportChannel struct {
	Name      string `json:"name"`
	Target    string `json:"target,omitempty"`
	SecretSet bool   `json:"secret_set,omitempty"`
}

// exportChannel is the export of a stored channel.
func exportChannel(name, target, secret string) ExportChannel {
	if name == "" {
		name = ChannelEmail
	}
	return ExportChannel{Name: name, Target: target, SecretSet: secret != ""}
}

// ExportPause is a pause lasting when the export was made: since when,
// and until when (absent: until resumed).
type ExportPause struct {
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
}

// exportPause is the export of a pause stored as (at, until), nil when
// none lasts at now.
func exportPause(at, until *time.Time, now time.Time) *ExportPause {
	if !IsPaused(at, until, now) {
		return nil
	}
	return &ExportPause{Since: at.UTC(), Until: utcPtrOf(until)}
}

// ExportDigest is one digest and its schedule.
type ExportDigest struct {
	Name       string        `json:"name"`
	Schedule   string        `json:"schedule"`
	Timezone   string        `json:"timezone"`
	NextSlotAt time.Time     `json:"next_slot_at"`
	LastSlotAt *time.Time    `json:"last_slot_at,omitempty"`
	CreatedAt  time.Time     `json:"created_at"`
	Channel    ExportChannel `json:"channel"`
}

// ExportLedgerEntry is one change to the person's credits.
type ExportLedgerEntry struct {
	ID           int64     `json:"id"`
	Kind         string    `json:"kind"`
	Amount       int64     `json:"amount"`
	BalanceAfter int64     `json:"balance_after"`
	Reason       string    `json:"reason"`
	CreatedAt    time.Time `json:"created_at"`
}

// ExportPurchase is one credit pack bought (or started and not paid).
type ExportPurchase struct {
	Credits         int64      `json:"credits"`
	PriceCents      int64      `json:"price_cents"`
	Currency        string     `json:"currency"`
	State           string     `json:"state"`
	CheckoutSession string     `json:"checkout_session"`
	CreatedAt       time.Time  `json:"created_at"`
	CompletedAt     *time.Time `json:"completed_at,omitempty"`
}

// ExportAccount collects u's data for their export: every subscription
// (ended too), digest, ledger entry, purchase and mail report, oldest
// first.
func (s *Store) ExportAccount(ctx context.Context, u *User) (*AccountExport, error) {
	db := s.DB.WithContext(ctx)
	out := &AccountExport{Email: u.Email, Timezone: u.Timezone, CreatedAt: u.CreatedAt.UTC(),
		ConfirmedAt: utcPtrOf(u.ConfirmedAt), Balance: u.Balance, ExportedAt: s.now(),
		Subscriptions: []ExportSubscription{}, Digests: []ExportDigest{}, Ledger: []ExportLedgerEntry{},
		Purchases: []ExportPurchase{}, Delivery: ExportDelivery{HardBounces: u.HardBounces,
			SoftBounces: u.SoftBounces, BouncingSince: utcPtrOf(u.BouncingSince), Reports: []ExportReport{}}}
	out.Paused = exportPause(u.PausedAt, u.PausedUntil, out.ExportedAt)
	var subs []SubscriptionView
	if err := db.Table("subscriptions AS s").
		Select("s.*, f.url AS feed_url, f.title AS feed_title, COALESCE(d.name, '') AS digest_name").
		Joins("JOIN feeds f ON f.id = s.feed_id").
		Joins("LEFT JOIN digests d ON d.id = s.digest_id").
		Where("s.user_id = ?", u.ID).Order("s.id").Scan(&subs).Error; err != nil {
		return nil, fmt.Errorf("export subscriptions of user %d: %w", u.ID, err)
	}
	for _, sub := range subs {
		e := ExportSubscription{FeedURL: sub.FeedURL, FeedTitle: sub.FeedTitle, State: sub.State, Delivery: "instant",
			Folder: sub.Folder, CreatedAt: sub.CreatedAt.UTC(), RequestedAt: utcPtrOf(sub.RequestedAt),
			ConfirmedAt: utcPtrOf(sub.ConfirmedAt), ConfirmedBy: sub.ConfirmedBy, EndedAt: utcPtrOf(sub.EndedAt),
			EndedReason: sub.EndedReason, Include: sub.IncludeTerms, Exclude: sub.ExcludeTerms, Format: sub.Format,
			Paused:  exportPause(sub.PausedAt, sub.PausedUntil, out.ExportedAt),
			Channel: exportChannel(sub.Channel, sub.Target, sub.ChannelSecret)}
		if sub.DigestID != nil {
			e.Delivery, e.Digest = "digest", sub.DigestName
		}
		if e.ConfirmedAt != nil && e.ConfirmedBy == "" {
			e.ConfirmedBy = "unrecorded"
		}
		out.Subscriptions = append(out.Subscriptions, e)
	}
	var digests []Digest
	if err := db.Where("user_id = ?", u.ID).Order("id").Find(&digests).Error; err != nil {
		return nil, fmt.Errorf("export digests of user %d: %w", u.ID, err)
	}
	for _, d := range digests {
		out.Digests = append(out.Digests, ExportDigest{Name: d.Name, Schedule: d.Schedule, Timezone: d.Timezone,
			NextSlotAt: d.NextSlotAt.UTC(), LastSlotAt: utcPtrOf(d.LastSlotAt), CreatedAt: d.CreatedAt.UTC(),
			Channel: exportChannel(d.Channel, d.Target, d.ChannelSecret)})
	}
	var entries []LedgerEntry
	if err := db.Where("user_id = ?", u.ID).Order("id").Find(&entries).Error; err != nil {
		return nil, fmt.Errorf("export ledger of user %d: %w", u.ID, err)
	}
	for _, e := range entries {
		out.Ledger = append(out.Ledger, ExportLedgerEntry{ID: e.ID, Kind: e.Kind, Amount: e.Amount,
			BalanceAfter: e.BalanceAfter, Reason: e.Reason, CreatedAt: e.CreatedAt.UTC()})
	}
	var purchases []Purchase
	if err := db.Where("user_id = ?", u.ID).Order("id").Find(&purchases).Error; err != nil {
		return nil, fmt.Errorf("export purchases of user %d: %w", u.ID, err)
	}
	for _, p := range purchases {
		out.Purchases = append(out.Purchases, ExportPurchase{Credits: p.Credits, PriceCents: p.PriceCents,
			Currency: p.Currency, State: p.State, CheckoutSession: p.StripeSessionID, CreatedAt: p.CreatedAt.UTC(),
			CompletedAt: utcPtrOf(p.CompletedAt)})
	}
	tokens, err := s.exportAPITokens(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out.APITokens = tokens
	reports, err := s.InboundEventsOf(ctx, u.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if out.Publisher, err = s.exportPublisher(ctx, u.ID); err != nil {
		return nil, err
	}
	slices.Reverse(reports) // oldest first, like the rest of the export
	for _, r := range reports {
		out.Delivery.Reports = append(out.Delivery.Reports, ExportReport{Kind: r.Kind, Severity: r.Severity,
			Reason: r.Reason, Party: r.Party, Status: r.Status, Detail: r.Detail, ReceivedAt: r.ReceivedAt.UTC()})
	}
	return out, nil
}

// utcPtrOf returns *t in UTC, nil for nil.
func utcPtrOf(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return utcPtr(*t)
}

// JSON is the export as its file holds it: indented, ending in a newline.
func (e *AccountExport) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode account export: %w", err)
	}
	return append(b, '\n'), nil
}
