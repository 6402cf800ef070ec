package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Buying credits with Stripe Checkout (stripe-go).
//
// A purchase is one Checkout Session in payment mode for one pack: the
// session carries the buyer's user id as client_reference_id and in its
// metadata (MetaUser, MetaCredits), so that a webhook event can be matched
// to the purchase row made when the session was created. Credits are
// granted only from a verified webhook — never from the redirect back to
// the success page, which anyone can open.

// Metadata keys on the Checkout Sessions feedmail makes.
const (
	MetaUser    = "feedmail_user"
	MetaCredits = "feedmail_credits"
)

// Checkout Session webhook event types feedmail acts on.
const (
	EventCheckoutCompleted      = "checkout.session.completed"
	EventCheckoutAsyncSucceeded = "checkout.session.async_payment_succeeded"
	EventCheckoutAsyncFailed    = "checkout.session.async_payment_failed"
	EventCheckoutExpired        = "checkout.session.expired"
)

// PaymentStatusPaid is a Checkout Session's payment_status once paid.
const PaymentStatusPaid = "paid"

// Defaults of StripeConfig.
const (
	DefaultCurrency         = "usd"
	DefaultWebhookTolerance = webhook.DefaultTolerance
)

// Webhook errors. Test with errors.Is.
var (
	// ErrBadSignature: no, a malformed or a non-matching Stripe-Signature.
	ErrBadSignature = errors.New("stripe webhook: bad signature")
	// ErrTooOld: the signed timestamp is outside the tolerance (a replay).
	ErrTooOld = errors.New("stripe webhook: timestamp outside tolerance")
	// ErrBadPayload: signed, but not an event feedmail can read.
	ErrBadPayload = errors.New("stripe webhook: unreadable event")
	// ErrPaymentsOff: Stripe keys are not configured.
	ErrPaymentsOff = errors.New("payments are not configured")
)

// StripeConfig configures Stripe.
type StripeConfig struct {
	// SecretKey is FEEDMAIL_STRIPE_SECRET_KEY; WebhookSecret is
	// FEEDMAIL_STRIPE_WEBHOOK_SECRET (the endpoint's signing secret).
	SecretKey, WebhookSecret string
	// APIURL is FEEDMAIL_STRIPE_API_URL: empty means Stripe's own; tests
	// point it at an httptest server.
	APIURL string
	// HTTPClient for API calls (default: one with a 30 s timeout).
	HTTPClient *http.Client
	// Currency of the packs' prices (default DefaultCurrency).
	Currency string
	// Tolerance is how old a webhook's signed timestamp may be (default
	// DefaultWebhookTolerance).
	Tolerance time.Duration
	// MaxNetworkRetries for API calls (nil: stripe-go's default of 2).
	MaxNetworkRetries *int64
}

// Stripe creates Checkout Sessions and verifies webhooks. It is safe for
// concurrent use.
type Stripe struct {
	client        *stripe.Client
	webhookSecret string
	currency      string
	tolerance     time.Duration
}

// NewStripe returns a Stripe for cfg; both keys are required
// (ErrPaymentsOff otherwise).
func NewStripe(cfg StripeConfig) (*Stripe, error) {
	if strings.TrimSpace(cfg.SecretKey) == "" || strings.TrimSpace(cfg.WebhookSecret) == "" {
		return nil, fmt.Errorf("%w: set FEEDMAIL_STRIPE_SECRET_KEY and FEEDMAIL_STRIPE_WEBHOOK_SECRET", ErrPaymentsOff)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Currency == "" {
		cfg.Currency = DefaultCurrency
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultWebhookTolerance
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        cfg.HTTPClient,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull}, // errors are returned and logged by the caller
		MaxNetworkRetries: cfg.MaxNetworkRetries,
	}
	if cfg.APIURL != "" {
		bc.URL = stripe.String(strings.TrimRight(cfg.APIURL, "/"))
	}
	return &Stripe{
		client:        stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))),
		webhookSecret: cfg.WebhookSecret,
		currency:      strings.ToLower(cfg.Currency),
		tolerance:     cfg.Tolerance,
	}, nil
}

// Currency is the currency prices are charged in (lower case ISO 4217).
func (s *Stripe) Currency() string { return s.currency }

// CheckoutRequest is one purchase to start.
type CheckoutRequest struct {
	Pack   Pack
	UserID int64
	Email  string // prefilled on Stripe's page
	// SuccessURL may contain {CHECKOUT_SESSION_ID}, which Stripe fills in.
	SuccessURL, CancelURL string
}

// CheckoutSession is a created session: the purchase's key (ID) and the
// page to send the buyer to (URL).
type CheckoutSession struct {
	ID, URL string
}

// CreateCheckout creates a Checkout Session for req.
func (s *Stripe) CreateCheckout(ctx context.Context, req CheckoutRequest) (CheckoutSession, error) {
	if req.Pack.Credits <= 0 || req.Pack.PriceCents <= 0 {
		return CheckoutSession{}, fmt.Errorf("checkout: invalid pack %v", req.Pack)
	}
	user := strconv.FormatInt(req.UserID, 10)
	credits := strconv.FormatInt(req.Pack.Credits, 10)
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL:        stripe.String(req.SuccessURL),
		CancelURL:         stripe.String(req.CancelURL),
		ClientReferenceID: stripe.String(user),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String(s.currency),
				UnitAmount: stripe.Int64(req.Pack.PriceCents),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripe.String(groupThousands(uint64(req.Pack.Credits)) + " feedmail credits"),
				},
			},
		}},
		Metadata: map[string]string{MetaUser: user, MetaCredits: credits},
	}
	if req.Email != "" {
		p.CustomerEmail = stripe.String(req.Email)
	}
	p.Context = ctx
	cs, err := s.client.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return CheckoutSession{}, fmt.Errorf("stripe: create checkout session: %w", err)
	}
	if cs.ID == "" || cs.URL == "" {
		return CheckoutSession{}, errors.New("stripe: checkout session without id or url")
	}
	return CheckoutSession{ID: cs.ID, URL: cs.URL}, nil
}

// WebhookEvent is the part of a verified Checkout Session event feedmail
// acts on.
type WebhookEvent struct {
	ID, Type string
	// Session is the Checkout Session's id ("" for events about other
	// objects).
	SessionID         string
	PaymentStatus     string
	ClientReferenceID string
	// UserID and Credits come from the session's metadata; Ours is true
	// when it carries feedmail's metadata (a session this install, or
	// another feedmail on the same Stripe account, made).
	UserID, Credits int64
	Ours            bool
	AmountTotal     int64
	Currency        string
}

// GrantsCredits reports whether the event completes a purchase: a
// completed or async-succeeded Checkout Session whose payment status is
// "paid". A completed session still "unpaid" (bank debits and other delayed
// methods) waits for its async_payment_succeeded event.
func (e WebhookEvent) GrantsCredits() bool {
	return (e.Type == EventCheckoutCompleted || e.Type == EventCheckoutAsyncSucceeded) && e.PaymentStatus == PaymentStatusPaid
}

// ParseWebhook verifies a webhook request's body against its
// Stripe-Signature header at now and decodes it. The signed timestamp's
// age is checked against now (the injected clock), not the wall clock, and
// events of any API version are accepted, since the fields read here are
// the same in all of them. Errors wrap ErrBadSignature, ErrTooOld or
// ErrBadPayload.
func (s *Stripe) ParseWebhook(payload []byte, sigHeader string, now time.Time) (WebhookEvent, error) {
	ts, err := signedAt(sigHeader)
	if err != nil {
		return WebhookEvent{}, err
	}
	ev, err := webhook.ConstructEventWithOptions(payload, sigHeader, s.webhookSecret,
		webhook.ConstructEventOptions{IgnoreTolerance: true, IgnoreAPIVersionMismatch: true})
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return WebhookEvent{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	case err != nil:
		return WebhookEvent{}, fmt.Errorf("%w: %v", ErrBadPayload, err)
	}
	if age := now.Sub(ts); age > s.tolerance || age < -s.tolerance {
		return WebhookEvent{}, fmt.Errorf("%w: signed at %s, %s from now (tolerance %s)", ErrTooOld,
			ts.UTC().Format(time.RFC3339), age.Round(time.Second), s.tolerance)
	}
	out := WebhookEvent{ID: ev.ID, Type: string(ev.Type)}
	if out.ID == "" || out.Type == "" {
		return WebhookEvent{}, fmt.Errorf("%w: event without id or type", ErrBadPayload)
	}
	if !strings.HasPrefix(out.Type, "checkout.session.") || ev.Data == nil {
		return out, nil
	}
	var cs stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil {
		return WebhookEvent{}, fmt.Errorf("%w: event %s: checkout session: %v", ErrBadPayload, ev.ID, err)
	}
	out.SessionID = cs.ID
	out.PaymentStatus = string(cs.PaymentStatus)
	out.ClientReferenceID = cs.ClientReferenceID
	out.AmountTotal = cs.AmountTotal
	out.Currency = string(cs.Currency)
	if u, err := strconv.ParseInt(cs.Metadata[MetaUser], 10, 64); err == nil {
		out.UserID = u
		out.Ours = true
	}
	if c, err := strconv.ParseInt(cs.Metadata[MetaCredits], 10, 64); err == nil {
		out.Credits = c
	}
	return out, nil
}

// signedAt reads the t= timestamp of a Stripe-Signature header. A header
// with several t= is refused: the age is checked on the one read here while
// stripe-go checks the signature with the last one it reads, so
// "t=NOW,t=OLD,v1=sig(OLD)" would replay an old event as a fresh one.
func signedAt(header string) (time.Time, error) {
	if strings.TrimSpace(header) == "" {
		return time.Time{}, fmt.Errorf("%w: no Stripe-Signature header", ErrBadSignature)
	}
	var (
		at    time.Time
		found int
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || strings.TrimSpace(k) != "t" {
			continue
		}
		if found++; found > 1 {
			return time.Time{}, fmt.Errorf("%w: several timestamps in Stripe-Signature", ErrBadSignature)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: bad timestamp in Stripe-Signature", ErrBadSignature)
		}
		at = time.Unix(n, 0)
	}
	if found == 0 {
		return time.Time{}, fmt.Errorf("%w: no timestamp in Stripe-Signature", ErrBadSignature)
	}
	return at, nil
}
