package billing

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

func testStripe(t *testing.T) *Stripe {
	t.Helper()
	s, err := NewStripe(StripeConfig{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", APIURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewStripeNeedsBothKeys(t *testing.T) {
	for _, c := range []StripeConfig{{}, {SecretKey: "sk"}, {WebhookSecret: "wh"}} {
		if _, err := NewStripe(c); !errors.Is(err, ErrPaymentsOff) {
			t.Errorf("NewStripe(%+v) = %v, want ErrPaymentsOff", c, err)
		}
	}
}

func TestParseWebhook(t *testing.T) {
	s := testStripe(t)
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	session := func(typ, status string, meta map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": typ,
			"api_version": "2020-08-27", // an old account version is accepted
			"data": map[string]any{"object": map[string]any{"id": "cs_1", "object": "checkout.session",
				"payment_status": status, "amount_total": 500, "currency": "usd", "metadata": meta}}})
		return b
	}
	ours := map[string]string{MetaUser: "42", MetaCredits: "5000"}
	sign := func(p []byte, secret string, at time.Time) string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: p, Secret: secret, Timestamp: at}).Header
	}
	paid := session(EventCheckoutCompleted, "paid", ours)
	tests := []struct {
		name    string
		payload []byte
		header  string
		wantErr error
		check   func(WebhookEvent) bool
	}{
		{"paid, ours", paid, sign(paid, "whsec_x", now), nil, func(e WebhookEvent) bool {
			return e.ID == "evt_1" && e.SessionID == "cs_1" && e.Ours && e.UserID == 42 && e.Credits == 5000 && e.GrantsCredits() && e.AmountTotal == 500
		}},
		{"at the tolerance edge", paid, sign(paid, "whsec_x", now.Add(-DefaultWebhookTolerance)), nil, nil},
		{"just past it", paid, sign(paid, "whsec_x", now.Add(-DefaultWebhookTolerance-time.Second)), ErrTooOld, nil},
		{"from the future", paid, sign(paid, "whsec_x", now.Add(DefaultWebhookTolerance+time.Second)), ErrTooOld, nil},
		{"other secret", paid, sign(paid, "whsec_y", now), ErrBadSignature, nil},
		{"no header", paid, "", ErrBadSignature, nil},
		{"no timestamp", paid, "v1=abcd", ErrBadSignature, nil},
		// A replay: a fresh t= first (the age check) and the old one last
		// (stripe-go checks the signature against the last).
		{"several timestamps", paid, "t=" + strconv.FormatInt(now.Unix(), 10) + "," + sign(paid, "whsec_x", now.Add(-time.Hour)), ErrBadSignature, nil},
		{"several timestamps, spaced", paid, sign(paid, "whsec_x", now) + ", t=" + strconv.FormatInt(now.Unix(), 10), ErrBadSignature, nil},
		{"unpaid", session(EventCheckoutCompleted, "unpaid", ours), sign(session(EventCheckoutCompleted, "unpaid", ours), "whsec_x", now), nil,
			func(e WebhookEvent) bool { return !e.GrantsCredits() }},
		{"async succeeded", session(EventCheckoutAsyncSucceeded, "paid", nil), sign(session(EventCheckoutAsyncSucceeded, "paid", nil), "whsec_x", now), nil,
			func(e WebhookEvent) bool { return e.GrantsCredits() && !e.Ours }},
		{"expired never grants", session(EventCheckoutExpired, "paid", ours), sign(session(EventCheckoutExpired, "paid", ours), "whsec_x", now), nil,
			func(e WebhookEvent) bool { return !e.GrantsCredits() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := s.ParseWebhook(tt.payload, tt.header, now)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(ev) {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}
