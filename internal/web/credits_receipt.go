package web

import (
	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// receipt is the store's receipt builder for a purchase the Stripe
// webhook grants: notices.PurchaseReceipt under billing.KeyReceipt, one
// per Checkout Session.
func (h *creditsHandler) receipt(p store.Purchase, e store.LedgerEntry) (string, store.Notice) {
	s := h.srv
	return billing.KeyReceipt(p.StripeSessionID), notices.PurchaseReceipt(s.links, s.Clock.Now(), p.UserID, notices.Receipt{
		Credits: p.Credits, PriceCents: p.PriceCents, Currency: p.Currency, BalanceAfter: e.BalanceAfter,
		Reference: p.StripeSessionID, PaidAt: e.CreatedAt,
	})
}
