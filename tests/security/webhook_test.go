package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
)

// checkoutEvent is a checkout.session.completed event as Stripe sends it
// for a session feedmail made (its metadata names the person and pack).
func checkoutEvent(id, session string, metaUser, metaCredits int64) []byte {
	obj := map[string]any{"id": session, "object": "checkout.session", "payment_status": "paid", "amount_total": 500,
		"currency": "usd", "mode": "payment", "client_reference_id": fmt.Sprint(metaUser),
		"metadata": map[string]string{billing.MetaUser: fmt.Sprint(metaUser), billing.MetaCredits: fmt.Sprint(metaCredits)}}
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": t0.Unix(),
		"type": billing.EventCheckoutCompleted, "data": map[string]any{"object": obj}})
	return b
}

func (e *env) webhook(payload []byte, sig string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(string(payload)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Stripe-Signature", sig)
	// Stripe's servers: a cross-site POST without a browser's headers.
	r.Header.Set("Origin", "https://stripe.example")
	r.RemoteAddr = "192.0.2.99:443"
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

// TestStripeWebhookReplay captures one genuine webhook delivery (body and
// Stripe-Signature header) and replays it: at once (accepted as a
// duplicate, nothing granted twice), after the signature's 5-minute
// tolerance (refused, 400), re-signed by Stripe's own retry (a duplicate),
// and as a new event for the same session (nothing more granted). A signed
// event whose metadata names another person and a bigger pack grants only
// the pack recorded at checkout, to the person who bought it.
func TestStripeWebhookReplay(t *testing.T) {
	e := newEnv(t, envOpt{})
	buyer, _, err := e.st.EnsureUser(e.ctx, "buyer@example.net")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := e.st.EnsureUser(e.ctx, "other@example.net")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreatePurchase(e.ctx, buyer.ID, 5000, 500, "usd", "cs_sec_1"); err != nil {
		t.Fatal(err)
	}
	payload := checkoutEvent("evt_sec_1", "cs_sec_1", buyer.ID, 5000)
	captured := sign(payload, webhookSecret, e.clk.Now())
	balance := func(id int64) int64 {
		b, err := e.st.Balance(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	steps := []struct {
		name    string
		advance time.Duration
		payload []byte
		sig     func() string
		code    int
		buyer   int64
	}{
		{"genuine delivery", 0, payload, func() string { return captured }, 200, 5000},
		{"captured request replayed at once", 0, payload, func() string { return captured }, 200, 5000},
		{"captured request replayed a minute later", time.Minute, payload, func() string { return captured }, 200, 5000},
		{"captured request replayed after the tolerance", 5 * time.Minute, payload, func() string { return captured }, 400, 5000},
		{"Stripe's own retry, signed anew", 0, payload, func() string { return sign(payload, webhookSecret, e.clk.Now()) }, 200, 5000},
		{"a new event id for the paid session", 0, checkoutEvent("evt_sec_2", "cs_sec_1", buyer.ID, 5000),
			func() string {
				return sign(checkoutEvent("evt_sec_2", "cs_sec_1", buyer.ID, 5000), webhookSecret, e.clk.Now())
			}, 200, 5000},
		{"signed with another endpoint's secret", 0, checkoutEvent("evt_sec_3", "cs_sec_1", buyer.ID, 5000),
			func() string {
				return sign(checkoutEvent("evt_sec_3", "cs_sec_1", buyer.ID, 5000), "whsec_other", e.clk.Now())
			}, 400, 5000},
	}
	for _, s := range steps {
		e.clk.Advance(s.advance)
		w := e.webhook(s.payload, s.sig())
		if w.Code != s.code {
			t.Errorf("%s: %d %s, want %d", s.name, w.Code, w.Body, s.code)
		}
		if b := balance(buyer.ID); b != s.buyer {
			t.Errorf("%s: balance %d, want %d", s.name, b, s.buyer)
		}
	}

	// A second purchase; the (genuinely signed) event claims another person
	// and a bigger pack: the recorded purchase decides.
	if _, err := e.st.CreatePurchase(e.ctx, buyer.ID, 5000, 500, "usd", "cs_sec_2"); err != nil {
		t.Fatal(err)
	}
	p := checkoutEvent("evt_sec_4", "cs_sec_2", other.ID, 100000)
	if w := e.webhook(p, sign(p, webhookSecret, e.clk.Now())); w.Code != http.StatusOK {
		t.Fatalf("second purchase: %d %s", w.Code, w.Body)
	}
	if b, o := balance(buyer.ID), balance(other.ID); b != 10000 || o != 0 {
		t.Errorf("after the second purchase: buyer %d (want 10000), other %d (want 0)", b, o)
	}
	var purchases int64
	e.st.DB.Model(&store.LedgerEntry{}).Where("kind = ?", store.LedgerPurchase).Count(&purchases)
	if purchases != 2 {
		t.Errorf("%d purchase entries in the ledger, want 2", purchases)
	}
}
