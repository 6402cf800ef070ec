package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

const (
	testStripeKey    = "sk_test_feedmail"
	testStripeSecret = "whsec_test_feedmail"
)

// fakeStripe is the Checkout Sessions endpoint of an httptest server: it
// records the create requests and answers with a new session each time.
type fakeStripe struct {
	srv   *httptest.Server
	mu    sync.Mutex
	forms []url.Values
	n     atomic.Int64
	fail  atomic.Bool
}

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" || r.Header.Get("Authorization") != "Bearer "+testStripeKey {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
			return
		}
		if f.fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"no"}}`))
			return
		}
		_ = r.ParseForm()
		f.mu.Lock()
		f.forms = append(f.forms, r.PostForm)
		f.mu.Unlock()
		id := fmt.Sprintf("cs_test_%d", f.n.Add(1))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "checkout.session",
			"url": "https://checkout.example/pay/" + id, "payment_status": "unpaid", "mode": "payment"})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStripe) lastForm(t *testing.T) url.Values {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.forms) == 0 {
		t.Fatal("Stripe was not called")
	}
	return f.forms[len(f.forms)-1]
}

// creditsHarness is the web harness with the credits routes, paid by the
// fake Stripe (or with payments off).
func creditsHarness(t *testing.T, payments bool) (*harness, *fakeStripe) {
	t.Helper()
	h := newHarness(t)
	c := CreditsConfig{Packs: billing.DefaultPacks()}
	var fs *fakeStripe
	if payments {
		fs = newFakeStripe(t)
		zero := int64(0)
		st, err := billing.NewStripe(billing.StripeConfig{SecretKey: testStripeKey, WebhookSecret: testStripeSecret,
			APIURL: fs.srv.URL, HTTPClient: fs.srv.Client(), MaxNetworkRetries: &zero})
		if err != nil {
			t.Fatal(err)
		}
		c.Stripe = st
	}
	h.srv.MountCredits(c)
	return h, fs
}

func (h *harness) user(email string) *store.User {
	h.t.Helper()
	u, _, err := h.st.EnsureUser(context.Background(), email)
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

func (h *harness) balance(id int64) int64 {
	h.t.Helper()
	b, err := h.st.Balance(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// event is a Checkout Session webhook event.
type event struct {
	id, typ, session, status string
	user, credits            int64
	ours                     bool
}

func (e event) payload() []byte {
	obj := map[string]any{"id": e.session, "object": "checkout.session", "payment_status": e.status,
		"amount_total": 500, "currency": "usd", "mode": "payment"}
	if e.ours {
		obj["client_reference_id"] = fmt.Sprint(e.user)
		obj["metadata"] = map[string]string{billing.MetaUser: fmt.Sprint(e.user), billing.MetaCredits: fmt.Sprint(e.credits)}
	}
	b, _ := json.Marshal(map[string]any{"id": e.id, "object": "event", "api_version": stripe.APIVersion,
		"created": 1772442000, "type": e.typ, "data": map[string]any{"object": obj}})
	return b
}

// sendWebhook posts payload signed with secret at ts.
func (h *harness) sendWebhook(payload []byte, secret string, ts time.Time) *httptest.ResponseRecorder {
	h.t.Helper()
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: ts})
	return h.rawWebhook(payload, sp.Header)
}

func (h *harness) rawWebhook(payload []byte, sig string) *httptest.ResponseRecorder {
	h.t.Helper()
	hr := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(string(payload)))
	hr.Header.Set("Content-Type", "application/json")
	if sig != "" {
		hr.Header.Set("Stripe-Signature", sig)
	}
	hr.RemoteAddr = "192.0.2.9:443"
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, hr)
	return w
}

func (h *harness) webhookEvent(e event) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.sendWebhook(e.payload(), testStripeSecret, h.clk.Now())
}

// purchase starts a checkout for u's 5,000-credit pack and returns its
// session id.
func (h *harness) purchase(u *store.User) string {
	h.t.Helper()
	w := h.post("/credits/checkout", url.Values{"pack": {"5000"}, "email": {u.Email}})
	if w.Code != http.StatusSeeOther {
		h.t.Fatalf("checkout: %d %s", w.Code, w.Body)
	}
	loc := w.Header().Get("Location")
	return loc[strings.LastIndexByte(loc, '/')+1:]
}

func TestCreditsPageWithoutPayments(t *testing.T) {
	h, _ := creditsHarness(t, false)
	w := h.get("/credits")
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET /credits: %d", w.Code)
	}
	if strings.Contains(body, "feedmail credits grant") {
		t.Error("the reader's page tells them to run an operator's command")
	}
	for _, want := range []string{"Payments are not configured", "Ask the person who runs it", "5,000 credits", "$5.00",
		"100,000 credits", "$50.00", "half price", "$1.00 per 1,000", "$0.50 per 1,000"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, `action="/credits/checkout"`) {
		t.Error("page offers checkout without payments")
	}
	u := h.user("a@example.com")
	if w := h.post("/credits/checkout", url.Values{"pack": {"5000"}, "email": {u.Email}}); w.Code != http.StatusServiceUnavailable {
		t.Errorf("checkout without payments: %d", w.Code)
	}
	if w := h.sendWebhook(event{id: "evt_1", typ: billing.EventCheckoutCompleted, session: "cs_1", status: "paid"}.payload(),
		testStripeSecret, h.clk.Now()); w.Code != http.StatusServiceUnavailable {
		t.Errorf("webhook without payments: %d", w.Code)
	}
}

func TestCheckout(t *testing.T) {
	h, fs := creditsHarness(t, true)
	u := h.user("buyer@example.com")
	tok := h.sign.SignIssued(token.Account, u.ID, h.clk.Now(), h.clk.Now().Add(time.Hour))

	page := h.get("/credits?token=" + tok).Body.String()
	for _, want := range []string{"buyer@example.com", `name="token" value="` + tok + `"`, `action="/credits/checkout"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page for a token lacks %q", want)
		}
	}

	tests := []struct {
		name     string
		form     url.Values
		want     int
		credits  int64
		price    int64
		purchase bool
	}{
		{"by token, bulk pack", url.Values{"pack": {"100000"}, "token": {tok}}, http.StatusSeeOther, 100000, 5000, true},
		{"by email", url.Values{"pack": {"5000"}, "email": {"buyer@EXAMPLE.com"}}, http.StatusSeeOther, 5000, 500, true},
		{"unknown email", url.Values{"pack": {"5000"}, "email": {"nobody@example.com"}}, http.StatusNotFound, 0, 0, false},
		{"no person", url.Values{"pack": {"5000"}}, http.StatusBadRequest, 0, 0, false},
		{"pack not on sale", url.Values{"pack": {"7"}, "token": {tok}}, http.StatusBadRequest, 0, 0, false},
		{"bad token", url.Values{"pack": {"5000"}, "token": {tok + "x"}}, http.StatusBadRequest, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fs.n.Load()
			w := h.post("/credits/checkout", tt.form)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if !tt.purchase {
				if fs.n.Load() != before {
					t.Fatal("Stripe was called for a refused checkout")
				}
				return
			}
			loc := w.Header().Get("Location")
			sid := loc[strings.LastIndexByte(loc, '/')+1:]
			if !strings.HasPrefix(loc, "https://checkout.example/pay/cs_test_") {
				t.Fatalf("redirect to %q", loc)
			}
			p, err := h.st.PurchaseBySession(context.Background(), sid)
			if err != nil {
				t.Fatal(err)
			}
			if p.UserID != u.ID || p.Credits != tt.credits || p.PriceCents != tt.price || p.State != store.PurchasePending || p.Currency != "usd" {
				t.Fatalf("purchase %+v", p)
			}
			f := fs.lastForm(t)
			for k, v := range map[string]string{
				"mode": "payment", "client_reference_id": fmt.Sprint(u.ID), "customer_email": u.Email,
				"line_items[0][price_data][unit_amount]": fmt.Sprint(tt.price), "line_items[0][price_data][currency]": "usd",
				"line_items[0][quantity]": "1", "metadata[feedmail_user]": fmt.Sprint(u.ID), "metadata[feedmail_credits]": fmt.Sprint(tt.credits),
				"success_url": "http://feedmail.test/credits?paid=1&session_id={CHECKOUT_SESSION_ID}",
				"cancel_url":  "http://feedmail.test/credits?canceled=1",
			} {
				if got := f.Get(k); got != v {
					t.Errorf("Stripe got %s=%q, want %q", k, got, v)
				}
			}
		})
	}

	fs.fail.Store(true)
	if w := h.post("/credits/checkout", url.Values{"pack": {"5000"}, "token": {tok}}); w.Code != http.StatusBadGateway {
		t.Errorf("Stripe error: %d", w.Code)
	}
	var n int64
	h.st.DB.Model(&store.Purchase{}).Count(&n)
	if n != 2 {
		t.Errorf("%d purchases recorded, want 2", n)
	}
}

// TestWebhookGrantsOnce: whatever order, repetition or concurrency Stripe's
// events come in, a paid purchase adds its pack exactly once.
func TestWebhookGrantsOnce(t *testing.T) {
	type step struct {
		id, typ, status string
		wantCode        int
	}
	completed, async := billing.EventCheckoutCompleted, billing.EventCheckoutAsyncSucceeded
	tests := []struct {
		name      string
		steps     []step
		wantPaid  bool
		wantState string
	}{
		{"completed and paid", []step{{"e1", completed, "paid", 200}}, true, store.PurchasePaid},
		{"replayed", []step{{"e1", completed, "paid", 200}, {"e1", completed, "paid", 200}, {"e1", completed, "paid", 200}}, true, store.PurchasePaid},
		{"completed then async succeeded", []step{{"e1", completed, "paid", 200}, {"e2", async, "paid", 200}}, true, store.PurchasePaid},
		{"out of order: async before completed", []step{{"e2", async, "paid", 200}, {"e1", completed, "unpaid", 200}}, true, store.PurchasePaid},
		{"delayed payment", []step{{"e1", completed, "unpaid", 200}, {"e2", async, "paid", 200}, {"e2", async, "paid", 200}}, true, store.PurchasePaid},
		{"unpaid only", []step{{"e1", completed, "unpaid", 200}}, false, store.PurchasePending},
		{"delayed payment failed", []step{{"e1", completed, "unpaid", 200}, {"e2", billing.EventCheckoutAsyncFailed, "unpaid", 200}}, false, store.PurchaseFailed},
		{"expired after paid stays paid", []step{{"e1", completed, "paid", 200}, {"e3", billing.EventCheckoutExpired, "unpaid", 200}}, true, store.PurchasePaid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := creditsHarness(t, true)
			u := h.user("buyer@example.com")
			sid := h.purchase(u)
			ids := map[string]bool{}
			for _, s := range tt.steps {
				w := h.webhookEvent(event{id: s.id, typ: s.typ, session: sid, status: s.status, user: u.ID, credits: 5000, ours: true})
				if w.Code != s.wantCode {
					t.Fatalf("%s %s: %d %s", s.id, s.typ, w.Code, w.Body)
				}
				ids[s.id] = true
			}
			want := int64(0)
			if tt.wantPaid {
				want = 5000
			}
			if b := h.balance(u.ID); b != want {
				t.Fatalf("balance %d, want %d", b, want)
			}
			var entries, events int64
			h.st.DB.Model(&store.LedgerEntry{}).Where("user_id = ?", u.ID).Count(&entries)
			h.st.DB.Model(&store.PaymentEvent{}).Count(&events)
			if entries != want/5000 || events != int64(len(ids)) {
				t.Fatalf("%d ledger entries, %d events recorded (want %d, %d)", entries, events, want/5000, len(ids))
			}
			if p, _ := h.st.PurchaseBySession(context.Background(), sid); p.State != tt.wantState {
				t.Fatalf("purchase state %s, want %s", p.State, tt.wantState)
			}
			rs := h.receipts(sid)
			if len(rs) != int(want/5000) {
				t.Fatalf("%d receipts queued, want %d", len(rs), want/5000)
			}
			for _, r := range rs {
				n, err := store.NoticeOf(&r)
				if err != nil || r.Credits != 0 || r.UserID != u.ID || n.Subject != "Your feedmail receipt: 5,000 credits" ||
					!strings.Contains(n.Text, "Amount paid: $5.00\nBalance after: 5,000 credits\n") || !strings.Contains(n.Text, "Reference: "+sid) {
					t.Errorf("receipt %+v: %+v (%v)", r, n, err)
				}
			}
		})
	}
}

// receipts returns the receipt notices queued for Checkout Session sid.
func (h *harness) receipts(sid string) []store.OutboxRow {
	h.t.Helper()
	var rows []store.OutboxRow
	if err := h.st.DB.Where("kind = ? AND dedupe_key = ?", store.KindNotice, billing.KeyReceipt(sid)).Find(&rows).Error; err != nil {
		h.t.Fatal(err)
	}
	return rows
}

// TestWebhookConcurrentDuplicates: the same event and a second paying
// event for the same session, delivered many times at once, grant once.
func TestWebhookConcurrentDuplicates(t *testing.T) {
	h, _ := creditsHarness(t, true)
	u := h.user("buyer@example.com")
	sid := h.purchase(u)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ, id := billing.EventCheckoutCompleted, "evt_a"
			if i%2 == 1 {
				typ, id = billing.EventCheckoutAsyncSucceeded, "evt_b"
			}
			w := h.webhookEvent(event{id: id, typ: typ, session: sid, status: "paid", user: u.ID, credits: 5000, ours: true})
			if w.Code != http.StatusOK {
				t.Errorf("concurrent delivery: %d %s", w.Code, w.Body)
			}
		}()
	}
	wg.Wait()
	if b := h.balance(u.ID); b != 5000 {
		t.Fatalf("balance %d after concurrent duplicates, want 5000", b)
	}
	if rs := h.receipts(sid); len(rs) != 1 {
		t.Fatalf("%d receipts after concurrent duplicates, want 1", len(rs))
	}
}

func TestWebhookRejects(t *testing.T) {
	h, _ := creditsHarness(t, true)
	u := h.user("buyer@example.com")
	sid := h.purchase(u)
	paid := event{id: "evt_1", typ: billing.EventCheckoutCompleted, session: sid, status: "paid", user: u.ID, credits: 5000, ours: true}
	now := h.clk.Now()
	good := paid.payload()
	tests := []struct {
		name string
		send func() *httptest.ResponseRecorder
		want int
	}{
		{"wrong secret", func() *httptest.ResponseRecorder { return h.sendWebhook(good, "whsec_other", now) }, 400},
		{"no signature", func() *httptest.ResponseRecorder { return h.rawWebhook(good, "") }, 400},
		{"garbage signature", func() *httptest.ResponseRecorder { return h.rawWebhook(good, "t=abc,v1=zz") }, 400},
		{"tampered body", func() *httptest.ResponseRecorder {
			sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: good, Secret: testStripeSecret, Timestamp: now})
			return h.rawWebhook([]byte(strings.Replace(string(good), `"feedmail_credits":"5000"`, `"feedmail_credits":"9000"`, 1)), sp.Header)
		}, 400},
		{"old timestamp", func() *httptest.ResponseRecorder {
			return h.sendWebhook(good, testStripeSecret, now.Add(-6*time.Minute))
		}, 400},
		{"future timestamp", func() *httptest.ResponseRecorder {
			return h.sendWebhook(good, testStripeSecret, now.Add(6*time.Minute))
		}, 400},
		{"signed garbage", func() *httptest.ResponseRecorder { return h.sendWebhook([]byte("not json"), testStripeSecret, now) }, 400},
		{"unknown feedmail session", func() *httptest.ResponseRecorder {
			e := paid
			e.session = "cs_unknown"
			return h.webhookEvent(e)
		}, 404},
		{"someone else's session", func() *httptest.ResponseRecorder {
			return h.webhookEvent(event{id: "evt_x", typ: billing.EventCheckoutCompleted, session: "cs_other", status: "paid"})
		}, 200},
		{"event type not acted on", func() *httptest.ResponseRecorder {
			b, _ := json.Marshal(map[string]any{"id": "evt_pi", "object": "event", "type": "payment_intent.succeeded",
				"api_version": stripe.APIVersion, "data": map[string]any{"object": map[string]any{"id": "pi_1", "object": "payment_intent"}}})
			return h.sendWebhook(b, testStripeSecret, now)
		}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := tt.send(); w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if b := h.balance(u.ID); b != 0 {
				t.Fatalf("balance %d after a refused event", b)
			}
		})
	}
	var events int64
	h.st.DB.Model(&store.PaymentEvent{}).Count(&events)
	if events != 0 {
		t.Fatalf("%d refused events were recorded", events)
	}
	// The genuine event, delivered in time, still grants (nothing above
	// used up its id).
	if w := h.webhookEvent(paid); w.Code != http.StatusOK || h.balance(u.ID) != 5000 {
		t.Fatalf("genuine event: %d, balance %d", w.Code, h.balance(u.ID))
	}
	if w := h.get("/credits?paid=1&session_id=" + sid); !strings.Contains(w.Body.String(), "5,000 credits were added") {
		t.Errorf("success page does not confirm the credits: %s", w.Body)
	}
}

// TestPurchaseReleasesHeldEmail: credits bought release what waited for
// them.
func TestPurchaseReleasesHeldEmail(t *testing.T) {
	h, _ := creditsHarness(t, true)
	u := h.user("buyer@example.com")
	now := h.clk.Now()
	row := store.OutboxRow{Kind: store.KindDigest, DedupeKey: "digest:held", UserID: u.ID, Address: u.Email, Credits: 2,
		State: store.OutboxHeld, LastError: store.HoldCredits, NextAttemptAt: now, CreatedAt: now}
	if err := h.st.DB.Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	sid := h.purchase(u)
	if w := h.webhookEvent(event{id: "evt_1", typ: billing.EventCheckoutCompleted, session: sid, status: "paid", user: u.ID, credits: 5000, ours: true}); w.Code != 200 {
		t.Fatalf("webhook: %d", w.Code)
	}
	var got store.OutboxRow
	if err := h.st.DB.Take(&got, row.ID).Error; err != nil {
		t.Fatal(err)
	}
	if got.State != store.OutboxQueued {
		t.Fatalf("held email is %s after the purchase, want queued", got.State)
	}
}

// TestAccountPagesOfferCreditsOnlyWithPayments: with payments off, the
// account and publisher pages offer no "Buy credits" (it led to packs
// nobody can buy) and say payments are off, as /credits does.
func TestAccountPagesOfferCreditsOnlyWithPayments(t *testing.T) {
	for _, payments := range []bool{false, true} {
		t.Run(fmt.Sprintf("payments %v", payments), func(t *testing.T) {
			h, _ := creditsHarness(t, payments)
			u := h.user("reader@example.com")
			acc := h.accountPath(u)
			for _, page := range []string{acc, acc + "/publisher"} {
				body := h.get(page).Body.String()
				buy := strings.Contains(body, ">Buy credits</a>") && strings.Contains(body, `href="/credits?token=`)
				off := strings.Contains(body, "does not take payments")
				if buy != payments || off == payments {
					t.Errorf("%s: offers to buy credits %v, says payments are off %v", page, buy, off)
				}
			}
		})
	}
}
