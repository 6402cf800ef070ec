package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/stripemock"
)

// TestCheckoutAgainstStripeMock buys a pack against Stripe's own mock: the
// Checkout Session is created by billing's real code (its API URL pointed
// at the mock, as FEEDMAIL_STRIPE_API_URL does), the mock checks the
// request against Stripe's API description, and the webhook Stripe would
// send for that session (the mock's event shape, the mock's session with
// the purchase completed) grants the pack. Any request the mock refuses
// fails the test.
func TestCheckoutAgainstStripeMock(t *testing.T) {
	mock := stripemock.Start(t)
	h := newHarness(t)
	zero := int64(0)
	st, err := billing.NewStripe(billing.StripeConfig{SecretKey: testStripeKey, WebhookSecret: testStripeSecret,
		APIURL: mock.URL, MaxNetworkRetries: &zero})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.MountCredits(CreditsConfig{Packs: billing.DefaultPacks(), Stripe: st})
	u := h.user("buyer@example.com")
	before := h.balance(u.ID)

	w := h.post("/credits/checkout", url.Values{"pack": {"5000"}, "email": {u.Email}})
	for _, r := range mock.Refused() {
		t.Errorf("stripe-mock refused %s %s (%d): %s\nform: %v", r.Method, r.Path, r.Status, r.Body, r.Form)
	}
	if w.Code != http.StatusSeeOther {
		t.Fatalf("checkout: %d %s", w.Code, w.Body)
	}
	ex := mock.Exchanges()
	if len(ex) != 1 || ex[0].Path != "/v1/checkout/sessions" {
		t.Fatalf("requests to Stripe: %+v, want one session created", ex)
	}
	var session map[string]any
	if err := json.Unmarshal(ex[0].Body, &session); err != nil {
		t.Fatalf("session from stripe-mock: %v", err)
	}
	sid, _ := session["id"].(string)
	if loc := w.Header().Get("Location"); sid == "" || loc != session["url"] {
		t.Fatalf("redirected to %q, the session (%q) pays at %v", loc, sid, session["url"])
	}
	p, err := h.st.PurchaseBySession(context.Background(), sid)
	if err != nil || p.UserID != u.ID || p.State != store.PurchasePending {
		t.Fatalf("purchase of session %s: %+v, %v", sid, p, err)
	}

	// What Stripe's session holds once paid: what was asked for (the mock
	// does not echo metadata or amounts back), paid and complete.
	sent := ex[0].Form
	session["metadata"] = map[string]string{billing.MetaUser: sent.Get("metadata[" + billing.MetaUser + "]"),
		billing.MetaCredits: sent.Get("metadata[" + billing.MetaCredits + "]")}
	session["client_reference_id"] = sent.Get("client_reference_id")
	session["amount_total"], session["currency"] = p.PriceCents, sent.Get("line_items[0][price_data][currency]")
	session["payment_status"], session["status"] = "paid", "complete"
	evt := mockEvent(t, mock, billing.EventCheckoutCompleted, session)
	if w := h.sendWebhook(evt, testStripeSecret, h.clk.Now()); w.Code != http.StatusOK {
		t.Fatalf("webhook: %d %s", w.Code, w.Body)
	}
	if got, want := h.balance(u.ID), before+5000; got != want {
		t.Fatalf("balance after the webhook: %d, want %d", got, want)
	}
	if p, _ := h.st.PurchaseBySession(context.Background(), sid); p.State == store.PurchasePending {
		t.Errorf("purchase still pending after the webhook: %+v", p)
	}
}

// mockEvent returns an event as Stripe sends it to a webhook endpoint:
// stripe-mock's event (its envelope and API version) with type typ and
// obj as its object.
func mockEvent(t *testing.T, mock *stripemock.Server, typ string, obj map[string]any) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, mock.Direct+"/v1/events/evt_feedmail_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(testStripeKey, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ev map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ev) != nil {
		t.Fatalf("event from stripe-mock: %d %s", resp.StatusCode, body)
	}
	if id, _ := ev["id"].(string); !strings.HasPrefix(id, "evt_") {
		t.Fatalf("event from stripe-mock without an evt_ id: %s", body)
	}
	ev["type"] = typ
	ev["data"] = map[string]any{"object": obj}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(fmt.Errorf("event: %w", err))
	}
	return b
}
