package main

import (
	"context"

	"github.com/feedmail/feedmail/internal/esp"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/web"
)

// mountESP serves POST /webhooks/{provider}: bounces and complaints from
// Amazon SES (through SNS), Postmark, SendGrid and Mailgun, each on while
// its variable is set (FEEDMAIL_SES_TOPIC_ARNS,
// FEEDMAIL_POSTMARK_WEBHOOK_AUTH, FEEDMAIL_SENDGRID_WEBHOOK_KEY,
// FEEDMAIL_MAILGUN_SIGNING_KEY), with their effects through the same
// outbox.Returns as bounces by mail. config.Load checked the values.
func mountESP(a *app, srv *web.Server) error {
	o := web.ESPOptions{SESTopics: a.cfg.SESTopicARNs, BounceAddress: a.cfg.BounceAddress}
	var on []string
	if len(o.SESTopics) > 0 {
		on = append(on, "ses")
	}
	if a.cfg.PostmarkWebhookAuth != "" {
		pm, err := esp.ParsePostmarkAuth(a.cfg.PostmarkWebhookAuth)
		if err != nil {
			return err
		}
		o.Postmark = &pm
		on = append(on, "postmark")
	}
	if a.cfg.SendGridWebhookKey != "" {
		k, err := esp.ParseSendGridKey(a.cfg.SendGridWebhookKey)
		if err != nil {
			return err
		}
		o.SendGridKey = k
		on = append(on, "sendgrid")
	}
	if a.cfg.MailgunSigningKey != "" {
		o.MailgunKey = []byte(a.cfg.MailgunSigningKey)
		on = append(on, "mailgun")
	}
	s, err := a.openStore(context.Background())
	if err != nil {
		return err
	}
	log := a.log.With("part", "webhooks")
	o.Notices = &outbox.Returns{Store: s, Links: a.links(), Clock: a.clock, Log: log, Metrics: a.metrics}
	srv.MountESP(o)
	if len(on) > 0 {
		a.log.Info("email service webhooks on", "providers", on, "path", "/webhooks/{provider}")
	}
	return nil
}
