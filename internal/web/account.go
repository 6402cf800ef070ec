package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// ledgerShown is how many recent ledger entries the account page lists.
const ledgerShown = 10

// customSchedule is the preset select's value for "my own cron spec".
const customSchedule = "custom"

// accountData is the account page.
type accountData struct {
	Token   string
	Email   string
	Bounces string // what bounces did to deliveries (store.BounceSummary), or ""
	Zone    string
	Balance int64
	Ledger  []store.LedgerEntry
	Subs    []accountSub
	Pending int // subscriptions waiting for the person's confirmation
	Digests []digestForm
	New     digestForm // the "new digest" form
	Presets []digest.Preset
	Zones   []string
	Flash   string
	Paused  string // the whole account's pause in words, "" when not paused
	// CreditsURL is where to buy credits; "" when this feedmail takes no
	// payments, and the page says so.
	CreditsURL string
	Now        time.Time
	// APITokens are the person's working API tokens; NewAPIToken is one
	// just made, shown this once (account_tokens.go).
	APITokens   []apiTokenRow
	NewAPIToken string
	// Offers are feeds that stopped working whose probable new address
	// waits for the person's choice (account_offers.go).
	Offers []accountOffer
	// AddForms are the "also deliver it to" forms as typed, by feed id,
	// when one was refused (account_deliveries.go).
	AddForms map[int64]channelForm
	// FreshLink says the page was opened with a link fresh enough to make
	// an API token (links.FreshSignIn); otherwise the page offers one.
	FreshLink bool
}

// accountSub is one subscription row.
type accountSub struct {
	store.SubscriptionView
	Title      string
	StatusURL  string
	FeedWords  string
	Delivery   string // "instant" or "digest-ID", the select's value
	DigestName string
	// Forecast is the cost a month as delivered now, in words ("about 30
	// credits a month as delivered now"); for a digest, the whole digest's.
	Forecast string
	Paused   string // its pause in words, "" when not paused
	// OwnerPaid says how an owner-paid feed is paid for ("" for the
	// others); CanPay shows the "I'll pay for it myself" button.
	OwnerPaid string
	CanPay    bool
	// Settings is the filters-and-format form, as stored or as typed.
	Settings settingsForm
	// ChannelForm is the channel form (account_channel.go).
	ChannelForm channelForm
	// Preview is the preview of the email the row's form chose ("" until
	// asked for: ?preview=ID).
	Preview template.URL
}

// digestForm is a digest's edit form (or the new-digest form, ID 0).
type digestForm struct {
	ID       int64
	Name     string
	Preset   string // preset key or customSchedule
	Spec     string
	Zone     string
	Next     time.Time
	Feeds    int
	Errors   map[string]string
	Zones    []string
	Schedule string // in words, for display
	// NextLocal is the next issue in the digest's zone ("Mon 24 Nov 07:00 Europe/Berlin").
	NextLocal string
	// Forecast is the digest's cost a month in words (its feeds with
	// enough history).
	Forecast string
	// ChannelForm is where its issues go (account_channel.go).
	ChannelForm channelForm
}

// accountFlash are the messages shown after an action redirected back.
var accountFlash = map[string]string{
	"delivery":     "Delivery changed.",
	"unsubscribed": "Unsubscribed. That delivery of the feed stops; any other delivery of it goes on.",
	"confirmed":    "Subscription confirmed.",
	"confirmedall": "Every feed waiting for you is confirmed.",
	"digest":       "Digest saved.",
	"digestgone":   "Digest deleted.",
	"paused":       "Paused. Nothing is sent or charged until the pause ends.",
	"resumed":      "Resumed. New posts are sent again.",
	"settings":     "Filters and format saved.",
	"channel":      "Channel saved.",
	"added":        "The feed now goes there too.",
	"readded":      "You already got the feed there; its settings are kept.",
	"paying":       "You now pay for this feed yourself, like any other.",
	"tokenrevoked": "API token revoked. It no longer works.",
	"freshlink":    "We emailed you a fresh sign-in link. Open it and make the token within 15 minutes.",
}

// accountPage is GET /account/{token}.
func (s *Server) accountPage(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d.Flash = accountFlash[r.URL.Query().Get("done")]
	d.withPreview(r.URL.Query())
	s.render(w, r, http.StatusOK, "account", "Your feedmail", d)
}

func (s *Server) accountView(ctx context.Context, u *store.User, tok string) (*accountData, error) {
	now := s.Clock.Now()
	d := &accountData{Token: tok, Email: u.Email, Zone: u.Timezone, Balance: u.Balance, Presets: digest.Presets(),
		Bounces: store.BounceSummary(u),
		Now:     now,
		Paused:  pauseWords(u.PausedAt, u.PausedUntil, now, u.Timezone), FreshLink: s.freshLink(tok, u, now)}
	if s.paymentsOn {
		d.CreditsURL = links.PathCredits + "?token=" + url.QueryEscape(tok)
	}
	var err error
	if d.Ledger, err = s.Store.LedgerOf(ctx, u.ID, ledgerShown); err != nil {
		return nil, err
	}
	if d.APITokens, err = s.apiTokenRows(ctx, u.ID); err != nil {
		return nil, err
	}
	if d.Offers, err = s.accountOffers(ctx, u.ID); err != nil {
		return nil, err
	}
	subs, err := s.Store.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	digests, err := s.Store.DigestsOfUser(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("digests of user %d: %w", u.ID, err)
	}
	perDigest := map[int64]int{}
	hist, err := s.histories(ctx, subs)
	if err != nil {
		return nil, err
	}
	ownerPaid, err := s.Store.OwnerPaidOfUser(ctx, u.ID, billing.OwnerNoticePeriod)
	if err != nil {
		return nil, err
	}
	digestCost := s.digestForecasts(digests, subs, hist, ownerPaid, now)
	for _, sub := range subs {
		as := subRow(sub, hist[sub.ID], digestCost, ownerPaid, now, u.Timezone)
		if sub.DigestID != nil {
			perDigest[*sub.DigestID]++
		}
		d.Subs = append(d.Subs, as)
		if sub.State == store.SubPending {
			d.Pending++
		}
	}
	for _, dg := range digests {
		d.Digests = append(d.Digests, digestRow(dg, perDigest[dg.ID], d.Presets, digestCost[dg.ID]))
	}
	zone := u.Timezone
	if zone == "" {
		zone = "UTC"
	}
	d.New = digestForm{Preset: "daily", Zone: zone, Zones: zoneOptions(zone)}
	d.Zones = zoneOptions(zone)
	return d, nil
}

// histories returns what the stored items of each subscribed feed say of
// its rate for each subscription (its filters applied), by subscription id.
func (s *Server) histories(ctx context.Context, subs []store.SubscriptionView) (map[int64]forecast.History, error) {
	out := map[int64]forecast.History{}
	type key struct {
		feed             int64
		include, exclude string
	}
	seen := map[key]forecast.History{}
	for _, sub := range subs {
		k := key{sub.FeedID, sub.IncludeTerms, sub.ExcludeTerms}
		h, ok := seen[k]
		if !ok {
			var err error
			if h, err = s.subs.StoredHistoryFiltered(ctx, sub.FeedID, sub.IncludeTerms, sub.ExcludeTerms); err != nil {
				return nil, err
			}
			seen[k] = h
		}
		out[sub.ID] = h
	}
	return out, nil
}

// digestForecasts returns each digest's cost a month in words, by digest
// id: its feeds on its schedule (forecast.DigestCost), leaving out feeds
// a publisher pays for.
func (s *Server) digestForecasts(digests []store.Digest, subs []store.SubscriptionView, hist map[int64]forecast.History,
	ownerPaid map[int64]store.OwnerPaidStatus, now time.Time) map[int64]string {
	feeds := map[int64][]forecast.History{}
	paidFor := map[int64]bool{}
	for _, sub := range subs {
		if o, ok := ownerPaid[sub.ID]; ok && !o.ReaderPays() {
			if sub.DigestID != nil {
				paidFor[*sub.DigestID] = true
			}
			continue // its publisher pays for it, as the charge says
		}
		if sub.DigestID != nil {
			feeds[*sub.DigestID] = append(feeds[*sub.DigestID], hist[sub.ID])
		}
	}
	out := map[int64]string{}
	for _, dg := range digests {
		sched, err := digest.ParseSchedule(dg.Schedule, dg.Timezone)
		if err != nil {
			continue // a stored schedule always parsed once; say nothing
		}
		known := 0
		for _, h := range feeds[dg.ID] {
			if h.Known() {
				known++
			}
		}
		switch {
		case len(feeds[dg.ID]) == 0 && paidFor[dg.ID]:
			out[dg.ID] = "nothing: their publishers pay for its feeds"
		case len(feeds[dg.ID]) == 0:
			out[dg.ID] = "nothing: it has no feeds"
		case known == 0:
			out[dg.ID] = "not enough history to tell the cost"
		case known < len(feeds[dg.ID]):
			n := len(feeds[dg.ID]) - known
			feedWord := " feeds"
			if n == 1 {
				feedWord = " feed"
			}
			out[dg.ID] = forecast.DigestCost(feeds[dg.ID], sched, now).Words() +
				", not counting " + strconv.Itoa(n) + feedWord + " with too little history"
		default:
			out[dg.ID] = forecast.DigestCost(feeds[dg.ID], sched, now).Words()
		}
	}
	return out
}

// subForecast is a subscription's cost a month as delivered now, in words.
func subForecast(sub store.SubscriptionView, h forecast.History, digestCost map[int64]string) string {
	if sub.DigestID != nil {
		if w, ok := digestCost[*sub.DigestID]; ok {
			return "digest “" + sub.DigestName + "” as a whole, as delivered now: " + w
		}
		return ""
	}
	if !h.Known() {
		return "not enough history to tell the cost"
	}
	return h.InstantCost().Words() + " as delivered now"
}

func feedStateWords(state string) string {
	switch state {
	case store.FeedGone:
		return "Feed gone (the site removed it)"
	case store.FeedBlacklisted:
		return "Feed stopped (it failed for 90 days)"
	}
	return "Feed checked regularly"
}

// localTime shows t in zone ("Mon 24 Nov 2026 07:00 Europe/Berlin").
func localTime(t time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2 Jan 2006 15:04 ") + loc.String()
}

// ledgerWords describes a ledger entry for people.
func ledgerWords(e store.LedgerEntry) string {
	r := e.Reason
	switch {
	case e.Kind == "charge" && e.Amount == 0 && strings.HasSuffix(r, "("+billing.BurstReason+")"):
		return "Email of a new post, free: it came in a burst (" + billing.BurstReason + ")"
	case e.Kind == "charge" && strings.HasPrefix(r, "item"):
		return "Email of a new post"
	case e.Kind == "charge" && strings.HasPrefix(r, "digest"):
		return "Digest issue"
	case e.Kind == "charge":
		return "Email sent"
	case e.Kind == "purchase":
		return "Credits bought"
	case e.Kind == "refund":
		return "Refund"
	case r != "":
		return strings.ToUpper(r[:1]) + r[1:]
	}
	return e.Kind
}

// backToAccount redirects (303) to the account page after an action.
func backToAccount(w http.ResponseWriter, r *http.Request, tok, done, anchor string) {
	http.Redirect(w, r, links.Fill(links.PathAccount, tok)+"?done="+done+"#"+anchor, http.StatusSeeOther)
}

// accountSubPost starts every POST about one subscription on the account
// page: it verifies the account token, reads the form and loads the {id}
// subscription, which must belong to the person. It answers the request
// itself and returns ok=false on failure.
func (s *Server) accountSubPost(w http.ResponseWriter, r *http.Request) (*store.User, string, *store.Subscription, bool) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return nil, "", nil, false
	}
	sub, ok := s.accountSubID(w, r, u)
	return u, tok, sub, ok
}

// accountSubID reads the {id} path value and checks that the subscription
// belongs to u.
func (s *Server) accountSubID(w http.ResponseWriter, r *http.Request, u *store.User) (*store.Subscription, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return nil, false
	}
	sub, err := s.Store.AccountSubscription(r.Context(), u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		s.notFound(w, r)
		return nil, false
	}
	if err != nil {
		s.serverError(w, r, err)
		return nil, false
	}
	return sub, true
}
