package main

import (
	"fmt"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/web"
)

// mountCredits serves the credits page, checkout and the Stripe webhook.
// Packs come from FEEDMAIL_CREDIT_PACKS (billing.DefaultPacks when unset; a
// bad value stops the server with the reason). Payments are on when both
// Stripe keys are set.
func mountCredits(a *app, srv *web.Server) error {
	packs := billing.DefaultPacks()
	if a.cfg.CreditPacks != "" {
		var err error
		if packs, err = billing.ParsePacks(a.cfg.CreditPacks); err != nil {
			return fmt.Errorf("FEEDMAIL_CREDIT_PACKS: %w", err)
		}
	}
	c := web.CreditsConfig{Packs: packs}
	if (a.cfg.StripeSecretKey == "") != (a.cfg.StripeWebhookSecret == "") {
		return fmt.Errorf("payments need both FEEDMAIL_STRIPE_SECRET_KEY and FEEDMAIL_STRIPE_WEBHOOK_SECRET; only one is set")
	}
	if a.cfg.PaymentsEnabled() {
		st, err := billing.NewStripe(billing.StripeConfig{
			SecretKey: a.cfg.StripeSecretKey, WebhookSecret: a.cfg.StripeWebhookSecret, APIURL: a.cfg.StripeAPIURL,
		})
		if err != nil {
			return err
		}
		c.Stripe = st
		a.log.Info("payments on: Stripe Checkout", "packs", len(packs))
	} else {
		a.log.Info("payments off: set FEEDMAIL_STRIPE_SECRET_KEY and FEEDMAIL_STRIPE_WEBHOOK_SECRET to sell credits")
	}
	srv.MountCredits(c)
	return nil
}
