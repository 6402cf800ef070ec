package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/ownership"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// Owner-paid feeds on the web: the publisher's page (the feeds they pay
// for, with readers, credits used and a forecast; claiming a feed with a
// token and checking it), and the reader's "I'll pay for it myself" when
// the publisher stopped paying.

// publisherData is the publisher's page.
type publisherData struct {
	Token   string
	Email   string
	Balance int64
	Owned   []ownedFeed
	Claims  []publisherClaim
	// Flash says what the last action did; Problem what went wrong.
	Flash, Problem string
	URL            string // the claim form's address, as typed
	// MoveFeedID and MoveTo ask the publisher to confirm a move whose
	// same-feed check found no post in common.
	MoveFeedID    int64
	MoveTo        string
	WellKnownPath string
	CreditsURL    string
}

// ownedFeed is one feed the person pays for.
type ownedFeed struct {
	store.OwnedFeedStats
	Title string
	// Forecast is the credits a month at the last 30 days' rate, and how
	// long the balance lasts at it, in words.
	Forecast string
	Lapsed   string // the lapse in words, "" when the owner pays
}

// publisherClaim is one claim with its token and the well-known URL.
type publisherClaim struct {
	store.OwnerClaimView
	Title     string
	WellKnown string
}

var publisherFlash = map[string]string{
	"claimed":  "Place the token below, then press “Check now”.",
	"verified": "Verified: you now pay for every reader of this feed.",
	"moved":    "Moved: your readers now get the feed from its new address, and each was told once.",
}

// publisherPage is GET /account/{token}/publisher.
func (s *Server) publisherPage(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	d, err := s.publisherView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d.Flash = publisherFlash[r.URL.Query().Get("done")]
	s.render(w, r, http.StatusOK, "publisher", "Feeds you publish", d)
}

func (s *Server) publisherView(ctx context.Context, u *store.User, tok string) (*publisherData, error) {
	d := &publisherData{Token: tok, Email: u.Email, Balance: u.Balance, WellKnownPath: ownership.WellKnownPath}
	if s.paymentsOn {
		d.CreditsURL = links.PathCredits + "?token=" + tok
	}
	owned, err := s.Store.OwnedFeeds(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	for _, o := range owned {
		h, err := s.subs.StoredHistory(ctx, o.FeedID)
		if err != nil {
			return nil, err
		}
		of := ownedFeed{OwnedFeedStats: o, Title: orURL(o.FeedTitle, o.FeedURL), Forecast: ownerForecast(h, o, u.Balance)}
		if o.LapsedAt != nil {
			of.Lapsed = "Your credits ran out on " + o.LapsedAt.UTC().Format("2 January") + ". Readers who do not choose to pay " +
				"are unsubscribed on " + o.LapsedAt.Add(billing.OwnerNoticePeriod).UTC().Format("2 January 2006") + " unless you add credits."
			if o.SweptAt != nil && o.SweptAt.Before(now) {
				of.Lapsed = "Your credits ran out: readers who did not choose to pay were unsubscribed. Add credits to pay for the others again."
			}
		}
		d.Owned = append(d.Owned, of)
	}
	claims, err := s.Store.ClaimsOf(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		if c.VerifiedAt != nil {
			continue
		}
		d.Claims = append(d.Claims, publisherClaim{OwnerClaimView: c, Title: orURL(c.FeedTitle, c.FeedURL),
			WellKnown: ownership.WellKnownURL(c.FeedURL)})
	}
	return d, nil
}

// ownerForecast says what an owned feed will cost its owner a month and
// how long balance lasts at that: from the feed's posting rate (h) times
// its instant readers, plus at most one credit per post for each digest
// reader (an issue needs a new post; several posts may share one). Without
// a known rate it goes by the last 30 days' use.
func ownerForecast(h forecast.History, o store.OwnedFeedStats, balance int64) string {
	if !h.Known() {
		if o.Used30d == 0 {
			return "not enough history to tell (" + h.Reason + ")"
		}
		return fmt.Sprintf("%d credits in the last 30 days%s", o.Used30d, lasts(float64(o.Used30d), balance))
	}
	instant := forecast.Cost{Expected: h.PerMonth * float64(o.Instant), Credits: forecast.Round(h.PerMonth * float64(o.Instant)),
		AtLeast: h.Capped}
	words := instant.Words() + " for instant readers"
	monthly := instant.Expected
	if o.Digest > 0 {
		upTo := h.PerMonth * float64(o.Digest)
		words += fmt.Sprintf(", plus up to %d for digest readers", forecast.Round(upTo))
		monthly += upTo
	}
	return words + lasts(monthly, balance)
}

// lasts says how long balance lasts at monthly credits a month.
func lasts(monthly float64, balance int64) string {
	if monthly <= 0 {
		return ""
	}
	days := int(float64(balance) * 30 / monthly)
	return fmt.Sprintf("; your balance lasts about %d days at that", days)
}

// publisherClaim is POST /account/{token}/publisher/claims: url is a feed
// feedmail knows; the person gets a token to place.
func (s *Server) publisherClaim(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	raw := clip(r.PostForm.Get("url"), 2048)
	norm, msg := subscribe.NormalizeFeedURL(raw)
	var f *store.Feed
	var err error
	if msg == "" {
		f, err = s.Store.FeedByURL(r.Context(), norm)
		if errors.Is(err, store.ErrNotFound) {
			msg = "feedmail does not know this feed yet: subscribe to it first, then claim it."
		} else if err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if msg != "" {
		s.publisherProblem(w, r, u, tok, raw, msg)
		return
	}
	if _, err := s.Store.ClaimFeed(r.Context(), u.ID, f.ID, ownership.NewToken()); err != nil {
		s.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, links.Fill(links.PathPublisher, tok)+"?done=claimed#claims", http.StatusSeeOther)
}

// claimCheckGap is the least time between two checks of one claim.
const claimCheckGap = time.Minute

// publisherCheck is POST /account/{token}/publisher/claims/{id}/check:
// fetch the feed (and the well-known URL) and look for the claim's token,
// at most once a minute per claim (claimCheckGap).
func (s *Server) publisherCheck(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return
	}
	c, err := s.Store.ClaimOf(r.Context(), u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		s.notFound(w, r)
		return
	} else if err != nil {
		s.serverError(w, r, err)
		return
	}
	if c.CheckedAt != nil && s.Clock.Now().Sub(*c.CheckedAt) < claimCheckGap {
		// Each check reads the publisher's feed and well-known URL: a
		// button pressed again and again must not become a flood.
		s.publisherProblem(w, r, u, tok, "", "Checked less than a minute ago: give the site a minute, then check again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*signupFetchTimeout)
	defer cancel()
	how, cerr := ownership.Check(ctx, s.Fetcher, c.FeedURL, c.Token)
	problem := ""
	if cerr != nil {
		problem = cerr.Error()
	}
	err = s.Store.ClaimChecked(r.Context(), &c.OwnerClaim, how, problem)
	switch {
	case errors.Is(err, store.ErrOwnedByOther):
		s.publisherProblem(w, r, u, tok, "", "Another publisher already pays for this feed. If it is yours, write to the operator.")
	case err != nil:
		s.serverError(w, r, err)
	case cerr != nil:
		s.publisherProblem(w, r, u, tok, "", "The token was not found: "+problem+".")
	default:
		s.Log.Info("feed owner verified", "feed", c.FeedID, "owner", u.ID, "by", how)
		http.Redirect(w, r, links.Fill(links.PathPublisher, tok)+"?done=verified", http.StatusSeeOther)
	}
}

// publisherProblem shows the publisher's page again with a problem.
func (s *Server) publisherProblem(w http.ResponseWriter, r *http.Request, u *store.User, tok, url, problem string) {
	d, err := s.publisherView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d.Problem, d.URL = problem, url
	s.render(w, r, http.StatusUnprocessableEntity, "publisher", "Feeds you publish", d)
}

// accountPay is POST /account/{token}/subscriptions/{id}/pay: the reader
// pays for an owner-paid feed themselves while its publisher's credits are
// out.
func (s *Server) accountPay(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	err := s.Store.ChooseToPay(r.Context(), u.ID, sub.ID)
	switch {
	case errors.Is(err, store.ErrNotOwnerPaid):
		s.renderMessage(w, r, http.StatusConflict, "Nothing to pay for",
			"Its publisher pays for this feed again (or no longer pays at all): there is nothing to choose.",
			pageLink{"Back to your account", links.Fill(links.PathAccount, tok)})
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "paying", "subscriptions")
	}
}

// ownerPaidWords says how an owner-paid subscription is paid for on the
// account page, and whether the reader may choose to pay.
func ownerPaidWords(st store.OwnerPaidStatus) (words string, canPay bool) {
	switch {
	case !st.Lapsed:
		return "Paid for by its publisher: free for you", false
	case st.Chose:
		return "Its publisher stopped paying: you pay for it", false
	}
	return "Its publisher stopped paying. It stays free until " + st.Deadline.UTC().Format("2 January 2006") +
		"; then it ends unless you pay for it yourself", true
}

// feedOwnerPaid reports whether the feed at raw (a known feed) is paid
// for by its publisher, for the signup page.
func (s *Server) feedOwnerPaid(ctx context.Context, raw string) bool {
	u, msg := subscribe.NormalizeFeedURL(raw)
	if raw == "" || msg != "" {
		return false
	}
	f, err := s.Store.FeedByURL(ctx, u)
	if err != nil {
		return false
	}
	o, err := s.Store.FeedOwnerOf(ctx, f.ID)
	return err == nil && o.LapsedAt == nil
}
