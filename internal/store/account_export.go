package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// exportChannel is the export of a stored channel.
func exportChannel(name, target, secret string) model.ExportChannel {
	if name == "" {
		name = model.ChannelEmail
	}
	return model.ExportChannel{Name: name, Target: target, SecretSet: secret != ""}
}

// exportPause is the export of a pause stored as (at, until), nil when
// none lasts at now.
func exportPause(at, until *time.Time, now time.Time) *model.ExportPause {
	if !IsPaused(at, until, now) {
		return nil
	}
	return &model.ExportPause{Since: at.UTC(), Until: utcPtrOf(until)}
}

// ExportAccount collects u's data for their export: every subscription
// (ended too), digest, ledger entry, purchase and mail report, oldest
// first.
func (s *Store) ExportAccount(ctx context.Context, u *User) (*model.AccountExport, error) {
	db := s.DB.WithContext(ctx)
	out := &model.AccountExport{Email: u.Email, Timezone: u.Timezone, CreatedAt: u.CreatedAt.UTC(),
		ConfirmedAt: utcPtrOf(u.ConfirmedAt), Balance: u.Balance, ExportedAt: s.now(),
		Subscriptions: []model.ExportSubscription{}, Digests: []model.ExportDigest{}, Ledger: []model.LedgerLine{},
		Purchases: []model.ExportPurchase{}, Delivery: model.ExportDelivery{HardBounces: u.HardBounces,
			SoftBounces: u.SoftBounces, BouncingSince: utcPtrOf(u.BouncingSince), Reports: []model.ExportReport{}}}
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
		e := model.ExportSubscription{FeedURL: sub.FeedURL, FeedTitle: sub.FeedTitle, State: sub.State, Delivery: "instant",
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
		out.Digests = append(out.Digests, model.ExportDigest{Name: d.Name, Schedule: d.Schedule, Timezone: d.Timezone,
			NextSlotAt: d.NextSlotAt.UTC(), LastSlotAt: utcPtrOf(d.LastSlotAt), CreatedAt: d.CreatedAt.UTC(),
			Channel: exportChannel(d.Channel, d.Target, d.ChannelSecret)})
	}
	var entries []LedgerEntry
	if err := db.Where("user_id = ?", u.ID).Order("id").Find(&entries).Error; err != nil {
		return nil, fmt.Errorf("export ledger of user %d: %w", u.ID, err)
	}
	for _, e := range entries {
		out.Ledger = append(out.Ledger, e.Line())
	}
	var purchases []Purchase
	if err := db.Where("user_id = ?", u.ID).Order("id").Find(&purchases).Error; err != nil {
		return nil, fmt.Errorf("export purchases of user %d: %w", u.ID, err)
	}
	for _, p := range purchases {
		out.Purchases = append(out.Purchases, model.ExportPurchase{Credits: p.Credits, PriceCents: p.PriceCents,
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
		out.Delivery.Reports = append(out.Delivery.Reports, model.ExportReport{Kind: r.Kind, Severity: r.Severity,
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
