package notices

import (
	"strings"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// RunningLow warns userID that balance will last less than about two
// weeks at their forecast rate (line is billing.LowLine of it), before
// anything is held. Buttons as CreditsOut. It is queued under
// billing.KeyLowNotice, once per fall below the line.
func RunningLow(l links.Links, now time.Time, userID, balance, line int64, paymentsOn bool) store.Notice {
	add := "Add credits now and nothing has to wait."
	if !paymentsOn {
		add = "This feedmail does not sell credits: ask the person who runs it to add some, and nothing has to wait."
	}
	lasts := billing.LowDaysWords(balance, line)
	if lasts == "" {
		lasts = "not long"
	}
	n := store.Notice{
		Subject: "Your feedmail credits are running low",
		Text: "You have " + billing.FormatCredits(balance) + " left. At the rate your feeds post, that lasts " + lasts +
			".\n\nWhen your credits run out, new posts wait instead of being emailed. " + add + "\n\n" +
			"This is the only reminder before your credits run out.",
	}
	return withCreditButtons(n, l, now, userID, paymentsOn)
}

// RunningLowNotice is the store.LowNotice that every place checking the
// line queues (the mailer after a charge, the running-low pass): the
// RunningLow notice at c's time under billing.KeyLowNotice.
func RunningLowNotice(l links.Links, c clock.Clock, paymentsOn bool) store.LowNotice {
	return func(userID, episode, balance, line int64) (string, store.Notice) {
		return billing.KeyLowNotice(userID, episode), RunningLow(l, c.Now(), userID, balance, line, paymentsOn)
	}
}

// Receipt is what a receipt says about one purchase.
type Receipt struct {
	Credits, PriceCents int64
	Currency            string
	// BalanceAfter is the balance right after the purchase's credits.
	BalanceAfter int64
	// Reference is the payment's reference (the Checkout Session id).
	Reference string
	PaidAt    time.Time
}

// PurchaseReceipt is the receipt of a purchase by userID: pack, credits,
// amount, balance after and reference. It is queued under
// billing.KeyReceipt, once per purchase. The button opens the account
// page (where the ledger downloads as CSV) when l can sign links.
func PurchaseReceipt(l links.Links, now time.Time, userID int64, r Receipt) store.Notice {
	lines := []string{
		"Pack: " + billing.FormatCredits(r.Credits) + " for " + billing.FormatPrice(r.PriceCents, r.Currency),
		"Credits added: " + billing.FormatCredits(r.Credits),
		"Amount paid: " + billing.FormatPrice(r.PriceCents, r.Currency),
		"Balance after: " + billing.FormatCredits(r.BalanceAfter),
		"Date: " + r.PaidAt.UTC().Format("2 January 2006 15:04 MST"),
		"Reference: " + r.Reference,
	}
	n := store.Notice{
		Subject: "Your feedmail receipt: " + billing.FormatCredits(r.Credits),
		Text: "Thank you for buying feedmail credits. Your payment was received and the credits are in your account.\n\n" +
			strings.Join(lines, "\n") + "\n\n" +
			"Keep this email for your records. Your account page lists every change to your credits and can download them as a spreadsheet (CSV).",
	}
	if l.Base != "" && l.Tokens != nil {
		n.Links = append(n.Links, store.NoticeLink{Label: "Your account", URL: l.Account(userID, now)})
	}
	return n
}

// withCreditButtons adds "Buy credits" (when paymentsOn) and "Your
// account" when l can sign links.
func withCreditButtons(n store.Notice, l links.Links, now time.Time, userID int64, paymentsOn bool) store.Notice {
	if l.Base != "" && l.Tokens != nil {
		if paymentsOn {
			n.Links = append(n.Links, store.NoticeLink{Label: "Buy credits", URL: l.CreditsFor(userID, now)})
		}
		n.Links = append(n.Links, store.NoticeLink{Label: "Your account", URL: l.Account(userID, now)})
	}
	return n
}
