package web

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/esp"
	"github.com/feedmail/feedmail/internal/inbound"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
)

// Bounces and complaints from email services: POST /webhooks/{provider}
// for ses (through SNS), postmark, sendgrid and mailgun. Each callback is
// authenticated the way its service documents (package esp), read into
// notices, and each notice has its effect through NoticeHandler, the same
// judgement and effects as a bounce by mail, once per email and effect.
// What each answer means is in docs/design.md.

// NoticeHandler has the effect of one notice: *outbox.Returns. It returns
// an error only when trying again later may work (the database).
type NoticeHandler interface {
	HandleNotice(ctx context.Context, n outbox.Notice) (outbox.Outcome, error)
}

// ESPOptions configure the email services' webhooks. A service whose
// settings are empty is off: its URL answers 404.
type ESPOptions struct {
	Notices NoticeHandler // required
	// SESTopics are the SNS topic ARNs accepted (FEEDMAIL_SES_TOPIC_ARNS).
	SESTopics []string
	// SNSHost is the host pattern a SigningCertURL and a SubscribeURL
	// must match (nil: esp.DefaultSNSHost); SNSClient fetches them (nil:
	// a client with SNSTimeout). Both are for tests.
	SNSHost   *regexp.Regexp
	SNSClient *http.Client
	// Postmark is the basic-auth user and password Postmark sends
	// (FEEDMAIL_POSTMARK_WEBHOOK_AUTH).
	Postmark *esp.PostmarkAuth
	// SendGridKey verifies SendGrid's Signed Event Webhook
	// (FEEDMAIL_SENDGRID_WEBHOOK_KEY).
	SendGridKey *ecdsa.PublicKey
	// MailgunKey is Mailgun's webhook signing key
	// (FEEDMAIL_MAILGUN_SIGNING_KEY).
	MailgunKey []byte
	// BounceAddress lets return tokens (bounces+TOKEN@) in a notification
	// name the email too.
	BounceAddress string
	// MaxBody caps a callback's body; default MaxESPBody.
	MaxBody int64
}

// MaxESPBody caps a callback's body (SendGrid batches a few hundred
// events; a Postmark bounce may carry the returned message).
const MaxESPBody = 1 << 20

// Timeouts: SNSTimeout for fetching a certificate or confirming a
// subscription, espApplyTimeout for applying one callback's notices.
const (
	SNSTimeout      = 10 * time.Second
	espApplyTimeout = 30 * time.Second
)

// MountESP adds POST /webhooks/{provider}.
func (s *Server) MountESP(o ESPOptions) {
	if o.MaxBody <= 0 {
		o.MaxBody = MaxESPBody
	}
	h := &espHandler{s: s, o: o, seen: &esp.Seen{}}
	if len(o.SESTopics) > 0 {
		client := o.SNSClient
		if client == nil {
			client = &http.Client{Timeout: SNSTimeout}
		}
		c := *client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		h.sns = &esp.SNSVerifier{Topics: o.SESTopics, Host: o.SNSHost}
		h.snsHTTP = &c
		h.sns.Certs = newSNSCerts(&c, h.sns.CheckURL, s.Clock.Now)
	}
	s.register(links.GroupESP, map[string]http.HandlerFunc{"espWebhook": h.serve})
}

type espHandler struct {
	s       *Server
	o       ESPOptions
	sns     *esp.SNSVerifier
	snsHTTP *http.Client
	seen    *esp.Seen // Mailgun tokens handled
}

// errConfirmed: an SNS (un)subscription confirmation was handled; there
// are no notices.
var errConfirmed = errors.New("confirmation handled")

// configured reports whether provider is on.
func (h *espHandler) configured(provider string) bool {
	switch provider {
	case "ses":
		return h.sns != nil
	case "postmark":
		return h.o.Postmark != nil
	case "sendgrid":
		return h.o.SendGridKey != nil
	case "mailgun":
		return len(h.o.MailgunKey) > 0
	}
	return false
}

func (h *espHandler) count(provider, outcome string, n int) {
	if h.s.Metrics != nil && n > 0 {
		h.s.Metrics.ESPNotices.WithLabelValues(provider, outcome).Add(float64(n))
	}
}

// answer writes a short text answer.
func answer(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}

// serve is POST /webhooks/{provider}.
func (h *espHandler) serve(w http.ResponseWriter, r *http.Request) {
	provider := r.PathValue("provider")
	if !h.configured(provider) {
		answer(w, http.StatusNotFound, "not found")
		return
	}
	log := h.s.Log.With("provider", provider)
	body, ok := h.readBody(w, r, provider, log)
	if !ok {
		return
	}
	now := h.s.Clock.Now()
	batch, token, err := h.parse(r, provider, body, now)
	if err != nil {
		h.answerError(w, provider, err, log)
		return
	}
	if token != nil && h.seen.Has(token.Token, now) {
		h.count(provider, "replay", 1)
		log.Info("email service callback replayed: token seen before, nothing done")
		answer(w, http.StatusOK, "already handled")
		return
	}
	applied, duplicate, ignored, err := h.apply(r.Context(), provider, batch, log)
	h.count(provider, "applied", applied)
	h.count(provider, "duplicate", duplicate)
	h.count(provider, "ignored", ignored+batch.Ignored)
	if err != nil {
		h.count(provider, "failed", 1)
		log.Error("email service notice not applied; the service will send it again", "err", err)
		answer(w, http.StatusServiceUnavailable, "temporarily unavailable, try again")
		return
	}
	if token != nil {
		h.seen.Add(token.Token, token.Timestamp, now)
	}
	answer(w, http.StatusOK, fmt.Sprintf("ok: %d applied, %d duplicate, %d ignored", applied, duplicate, ignored+batch.Ignored))
}

// readBody reads a callback's body within the size limit; false when it
// answered already (too large, unreadable).
func (h *espHandler) readBody(w http.ResponseWriter, r *http.Request, provider string, log *slog.Logger) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err == nil {
		return body, true
	}
	h.count(provider, "malformed", 1)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		log.Warn("email service callback too large", "limit", h.o.MaxBody)
		answer(w, http.StatusRequestEntityTooLarge, "too large")
		return nil, false
	}
	answer(w, http.StatusBadRequest, "unreadable body")
	return nil, false
}

// parse authenticates a callback the way its service documents and reads
// its notices; for Mailgun it also returns the signature, whose token is
// remembered once the notices are applied.
func (h *espHandler) parse(r *http.Request, provider string, body []byte, now time.Time) (esp.Batch, *esp.MailgunSignature, error) {
	opt := esp.Options{BounceAddress: h.o.BounceAddress}
	switch provider {
	case "ses":
		b, err := h.ses(r.Context(), body, opt, now, h.s.Log.With("provider", provider))
		return b, nil, err
	case "postmark":
		if err := h.o.Postmark.Check(r.Header.Get("Authorization")); err != nil {
			return esp.Batch{}, nil, err
		}
		b, err := esp.ParsePostmark(body, opt)
		return b, nil, err
	case "sendgrid":
		if err := esp.VerifySendGrid(h.o.SendGridKey, body, r.Header.Get(esp.SendGridSignatureHeader),
			r.Header.Get(esp.SendGridTimestampHeader), now); err != nil {
			return esp.Batch{}, nil, err
		}
		b, err := esp.ParseSendGrid(body, opt)
		return b, nil, err
	case "mailgun":
		m, err := esp.DecodeMailgun(body)
		if err == nil {
			err = m.Verify(h.o.MailgunKey, now)
		}
		if err != nil {
			return esp.Batch{}, nil, err
		}
		return m.Batch(opt), &m.Signature, nil
	}
	return esp.Batch{}, nil, fmt.Errorf("%w: unknown service %q", esp.ErrMalformed, provider)
}

// apply hands each notice to the judgement and its effects, counting what
// became of them; an error means a retry may work (the database is away).
func (h *espHandler) apply(ctx context.Context, provider string, batch esp.Batch, log *slog.Logger) (applied, duplicate, ignored int, err error) {
	ctx, cancel := context.WithTimeout(ctx, espApplyTimeout)
	defer cancel()
	for _, n := range batch.Notices {
		kind := inbound.KindBounce
		if n.Kind == esp.KindComplaint {
			kind = inbound.KindComplaint
		}
		out, err := h.o.Notices.HandleNotice(ctx, outbox.Notice{Kind: kind, Failure: n.Failure, Recipient: n.Recipient,
			MessageIDs: n.MessageIDs, Tokens: n.Tokens, Format: provider})
		if err != nil {
			return applied, duplicate, ignored, fmt.Errorf("notice %s: %w", n.Event, err)
		}
		switch {
		case out.Email != 0 && out.Action == "already handled":
			duplicate++
		case out.Email != 0:
			applied++
		default:
			ignored++
			log.Debug("email service notice about no email of ours", "event", n.Event, "action", out.Action)
		}
	}
	return applied, duplicate, ignored, nil
}

// answerError answers a callback that was refused (authentication,
// signature, timestamp, form) or could not be handled yet, or that was an
// SNS confirmation (errConfirmed).
func (h *espHandler) answerError(w http.ResponseWriter, provider string, err error, log *slog.Logger) {
	switch {
	case errors.Is(err, errConfirmed):
		h.count(provider, "confirmed", 1)
		answer(w, http.StatusOK, "ok")
	case errors.Is(err, esp.ErrUnauthenticated):
		h.count(provider, "refused", 1)
		log.Warn("email service callback without credentials refused", "err", err)
		if provider == "postmark" {
			w.Header().Set("WWW-Authenticate", `Basic realm="feedmail webhooks"`)
		}
		answer(w, http.StatusUnauthorized, "unauthenticated")
	case errors.Is(err, esp.ErrForged), errors.Is(err, esp.ErrStale):
		h.count(provider, "refused", 1)
		log.Warn("email service callback refused", "err", err)
		answer(w, http.StatusForbidden, "forbidden")
	case errors.Is(err, esp.ErrMalformed):
		h.count(provider, "malformed", 1)
		log.Warn("malformed email service callback", "err", err)
		answer(w, http.StatusBadRequest, "malformed notification")
	default: // the SNS certificate or confirmation could not be had
		h.count(provider, "failed", 1)
		log.Warn("email service callback not handled; the service will send it again", "err", err)
		answer(w, http.StatusServiceUnavailable, "temporarily unavailable, try again")
	}
}

// ses reads an SNS message: a notification's SES JSON becomes notices; a
// subscription confirmation is confirmed by fetching its SubscribeURL
// (errConfirmed); an unsubscribe confirmation is logged (errConfirmed).
func (h *espHandler) ses(ctx context.Context, body []byte, opt esp.Options, now time.Time, log *slog.Logger) (esp.Batch, error) {
	m, err := esp.DecodeSNS(body)
	if err != nil {
		return esp.Batch{}, err
	}
	vctx, cancel := context.WithTimeout(ctx, SNSTimeout)
	defer cancel()
	if err := h.sns.Verify(vctx, m, now); err != nil {
		return esp.Batch{}, err
	}
	switch m.Type {
	case esp.SNSSubscriptionConfirmation:
		if err := h.confirm(vctx, m.SubscribeURL); err != nil {
			log.Warn("SNS subscription not confirmed; SNS sends the confirmation again, or visit its SubscribeURL",
				"topic", m.TopicArn, "subscribe_url", m.SubscribeURL, "err", err)
			return esp.Batch{}, fmt.Errorf("confirm subscription: %w", err)
		}
		log.Info("SNS subscription confirmed", "topic", m.TopicArn)
		return esp.Batch{}, errConfirmed
	case esp.SNSUnsubscribeConfirmation:
		log.Warn("SNS says this endpoint was unsubscribed from the topic; bounces from SES no longer arrive here",
			"topic", m.TopicArn, "subscribe_again", m.SubscribeURL)
		return esp.Batch{}, errConfirmed
	}
	return esp.ParseSES([]byte(m.Message), opt)
}

// confirm fetches an SNS SubscribeURL (checked to be on an SNS host).
func (h *espHandler) confirm(ctx context.Context, subscribeURL string) error {
	u, err := h.sns.CheckURL(subscribeURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := h.snsHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("SubscribeURL answered %s", strings.TrimSpace(resp.Status))
	}
	return nil
}
