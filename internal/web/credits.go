package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// Buying credits: GET /credits (packs and prices), POST /credits/checkout
// (start a Stripe Checkout Session) and POST /webhooks/stripe (Stripe says a
// session was paid; the pack is granted once, only by the verified
// webhook). Who may buy, and what each webhook answer means, is in
// docs/design.md.

// CreditsConfig is what the credits routes need; cmd/feedmail fills it in.
type CreditsConfig struct {
	// Packs on sale (billing.ParsePacks of FEEDMAIL_CREDIT_PACKS, or
	// billing.DefaultPacks).
	Packs []billing.Pack
	// Stripe is nil when payments are not configured.
	Stripe *billing.Stripe
}

// maxWebhookBody caps a webhook request body (Stripe's events are far
// smaller).
const maxWebhookBody = 1 << 20

// MountCredits adds the credits page, checkout and the Stripe webhook.
func (s *Server) MountCredits(c CreditsConfig) {
	h := &creditsHandler{srv: s, cfg: c}
	s.paymentsOn = c.Stripe != nil
	s.register(links.GroupCredits, map[string]http.HandlerFunc{
		"creditsPage": h.page, "checkout": h.checkout, "stripeWebhook": h.webhook})
}

type creditsHandler struct {
	srv *Server
	cfg CreditsConfig
}

// packView is one pack as the page shows it.
type packView struct {
	Credits     int64
	Label       string // "5,000 credits"
	Price       string // "$5.00"
	PerThousand string // "$1.00 per 1,000"
	Saving      string // "half price", "30 % off" against the smallest pack
}

// creditsData is the page's data.
type creditsData struct {
	Packs      []packView
	PaymentsOn bool
	// The buyer, when known from an account token.
	Token, Email string
	Balance      int64
	Flash        string
	Error        string
	FormEmail    string
}

func (h *creditsHandler) currency() string {
	if h.cfg.Stripe != nil {
		return h.cfg.Stripe.Currency()
	}
	return billing.DefaultCurrency
}

func (h *creditsHandler) views() []packView {
	cur := h.currency()
	out := make([]packView, 0, len(h.cfg.Packs))
	var base float64
	for i, p := range h.cfg.Packs {
		per := p.CentsPerThousand()
		v := packView{Credits: p.Credits, Label: groupDigits(p.Credits) + " credits",
			Price: billing.FormatPrice(p.PriceCents, cur)}
		if per == float64(int64(per)) {
			v.PerThousand = billing.FormatPrice(int64(per), cur) + " per 1,000"
		}
		if i == 0 {
			base = per
		} else if base > 0 && per < base {
			switch off := int((1 - per/base) * 100); {
			case off == 50:
				v.Saving = "half price"
			case off > 0:
				v.Saving = strconv.Itoa(off) + " % off"
			}
		}
		out = append(out, v)
	}
	return out
}

// groupDigits writes 100000 as "100,000".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// page is GET /credits[?token=…][&paid=1&session_id=…|&canceled=1].
func (h *creditsHandler) page(w http.ResponseWriter, r *http.Request) {
	s := h.srv
	q := r.URL.Query()
	d := creditsData{Packs: h.views(), PaymentsOn: h.cfg.Stripe != nil}
	if tok := q.Get("token"); tok != "" {
		u, ok := h.tokenUser(w, r, tok)
		if !ok {
			return
		}
		d.Token, d.Email, d.Balance = tok, u.Email, u.Balance
	}
	switch {
	case q.Get("paid") != "":
		d.Flash = "Thank you! Your credits are added as soon as Stripe confirms the payment, usually within seconds."
		if sid := q.Get("session_id"); sid != "" {
			if p, err := s.Store.PurchaseBySession(r.Context(), sid); err == nil && p.State == store.PurchasePaid {
				d.Flash = "Thank you! " + groupDigits(p.Credits) + " credits were added to your account."
			}
		}
	case q.Get("canceled") != "":
		d.Flash = "Checkout was cancelled; nothing was charged."
	}
	s.render(w, r, http.StatusOK, "credits", "Buy credits", d)
}

// tokenUser resolves an account token, answering the request itself when
// it does not work.
func (h *creditsHandler) tokenUser(w http.ResponseWriter, r *http.Request, tok string) (*store.User, bool) {
	s := h.srv
	if s.Tokens == nil {
		s.renderMessage(w, r, http.StatusServiceUnavailable, "Not available", "Account links are not set up on this server.")
		return nil, false
	}
	u, _, ok := s.accountLink(w, r, tok, "buy credits for your account")
	return u, ok
}

// checkout is POST /credits/checkout: pack=<credits> and token=… or
// email=…; it creates a Checkout Session, records the purchase and sends
// the browser to Stripe (303).
func (h *creditsHandler) checkout(w http.ResponseWriter, r *http.Request) {
	s := h.srv
	if h.cfg.Stripe == nil {
		s.Log.Warn("credits checkout: payments are not configured")
		s.renderMessage(w, r, http.StatusServiceUnavailable, "Payments are not configured",
			"This feedmail does not take payments. Ask the person who runs it to add credits to your account.")
		return
	}
	if !s.parseForm(w, r) {
		return
	}
	var pack *billing.Pack
	if n, err := strconv.ParseInt(strings.TrimSpace(r.PostForm.Get("pack")), 10, 64); err == nil {
		for i := range h.cfg.Packs {
			if h.cfg.Packs[i].Credits == n {
				pack = &h.cfg.Packs[i]
			}
		}
	}
	retry := func(status int, msg, email string) {
		d := creditsData{Packs: h.views(), PaymentsOn: true, Error: msg, FormEmail: email}
		s.render(w, r, status, "credits", "Buy credits", d)
	}
	if pack == nil {
		retry(http.StatusBadRequest, "Please choose one of the packs below.", r.PostForm.Get("email"))
		return
	}
	var u *store.User
	if tok := r.PostForm.Get("token"); tok != "" {
		var ok bool
		if u, ok = h.tokenUser(w, r, tok); !ok {
			return
		}
	} else {
		email := strings.TrimSpace(r.PostForm.Get("email"))
		if at := strings.LastIndexByte(email, '@'); at < 1 || at == len(email)-1 || len(email) > 254 {
			retry(http.StatusBadRequest, "Please enter the email address your feedmail goes to.", email)
			return
		}
		var err error
		u, err = s.Store.UserByEmail(r.Context(), email)
		if errors.Is(err, store.ErrNotFound) {
			retry(http.StatusNotFound, "There is no feedmail account for "+email+". Subscribe to a feed first; credits belong to an account.", email)
			return
		}
		if err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	base := s.Config.BaseURL
	cs, err := h.cfg.Stripe.CreateCheckout(r.Context(), billing.CheckoutRequest{
		Pack: *pack, UserID: u.ID, Email: u.Email,
		SuccessURL: base + links.PathCredits + "?paid=1&session_id={CHECKOUT_SESSION_ID}",
		CancelURL:  base + links.PathCredits + "?canceled=1",
	})
	if err != nil {
		s.Log.Error("credits checkout: creating the Stripe session failed", "user", u.ID, "pack", pack.Credits, "err", err)
		s.renderMessage(w, r, http.StatusBadGateway, "The payment service did not answer",
			"Nothing was charged. Please try again in a minute.")
		return
	}
	if _, err := s.Store.CreatePurchase(r.Context(), u.ID, pack.Credits, pack.PriceCents, h.cfg.Stripe.Currency(), cs.ID); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.Log.Info("credits checkout started", "user", u.ID, "credits", pack.Credits, "price_cents", pack.PriceCents, "session", cs.ID)
	http.Redirect(w, r, cs.URL, http.StatusSeeOther)
}

// webhook is POST /webhooks/stripe.
func (h *creditsHandler) webhook(w http.ResponseWriter, r *http.Request) {
	s := h.srv
	log := s.Log.With("handler", "stripe webhook")
	reply := func(status int, v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if h.cfg.Stripe == nil {
		log.Warn("webhook received but payments are not configured")
		reply(http.StatusServiceUnavailable, map[string]any{"error": "payments are not configured"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		log.Warn("webhook body unreadable", "err", err)
		reply(http.StatusBadRequest, map[string]any{"error": "body unreadable"})
		return
	}
	ev, err := h.cfg.Stripe.ParseWebhook(body, r.Header.Get("Stripe-Signature"), s.Clock.Now())
	if err != nil {
		log.Warn("webhook refused", "remote", clientIP(r), "err", err)
		reply(http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	log = log.With("event", ev.ID, "type", ev.Type, "session", ev.SessionID)
	in := store.PaymentEventInput{EventID: ev.ID, Type: ev.Type, SessionID: ev.SessionID}
	switch ev.Type {
	case billing.EventCheckoutCompleted, billing.EventCheckoutAsyncSucceeded:
		in.Grant = ev.GrantsCredits()
		in.LedgerKey = billing.KeyPurchase(ev.SessionID)
		in.Receipt = h.receipt
	case billing.EventCheckoutAsyncFailed:
		in.EndState = store.PurchaseFailed
	case billing.EventCheckoutExpired:
		in.EndState = store.PurchaseExpired
	default:
		log.Debug("webhook event ignored: not one feedmail acts on")
		reply(http.StatusOK, map[string]any{"received": true, "ignored": true})
		return
	}
	if ev.SessionID == "" {
		log.Warn("checkout event without a session id; ignored")
		reply(http.StatusOK, map[string]any{"received": true, "ignored": true})
		return
	}
	res, err := s.Store.SettlePurchase(r.Context(), in)
	switch {
	case errors.Is(err, store.ErrNotFound) && !ev.Ours:
		log.Info("webhook for a checkout session feedmail did not make; ignored")
		reply(http.StatusOK, map[string]any{"received": true, "ignored": true})
		return
	case errors.Is(err, store.ErrNotFound):
		log.Error("webhook for an unknown feedmail checkout session; Stripe will retry", "user", ev.UserID, "credits", ev.Credits)
		reply(http.StatusNotFound, map[string]any{"error": "unknown checkout session"})
		return
	case err != nil:
		log.Error("webhook could not be recorded; Stripe will retry", "err", err)
		reply(http.StatusInternalServerError, map[string]any{"error": "could not record the event"})
		return
	}
	p := res.Purchase
	if ev.Ours && (ev.UserID != p.UserID || (ev.AmountTotal != 0 && ev.AmountTotal != p.PriceCents)) {
		log.Warn("webhook session differs from the purchase recorded", "purchase_user", p.UserID, "event_user", ev.UserID,
			"price_cents", p.PriceCents, "amount_total", ev.AmountTotal)
	}
	switch {
	case res.Duplicate:
		log.Info("webhook event seen before; nothing to do")
	case res.Granted:
		log.Info("credits purchased", "user", p.UserID, "credits", p.Credits, "balance", res.Entry.BalanceAfter, "released", res.Released)
	case in.Grant:
		log.Info("purchase was granted already; nothing more to grant", "user", p.UserID)
	default:
		log.Info("payment event recorded", "payment_status", ev.PaymentStatus, "purchase_state", p.State)
	}
	reply(http.StatusOK, map[string]any{"received": true, "duplicate": res.Duplicate, "granted": res.Granted})
}
