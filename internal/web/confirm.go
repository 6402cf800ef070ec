package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// confirmData is the confirmation page, before and after the button.
type confirmData struct {
	Token      string
	Email      string
	FeedTitle  string
	FeedURL    string
	DigestName string
	Done       bool   // confirmed (now or earlier)
	Already    bool   // it was confirmed before this request
	AccountURL string // shown once confirmed
	Trial      int64  // credits granted now (0: none)
}

// confirmSubject verifies a confirm token and loads what the page shows. It
// answers the request itself and returns ok=false on a bad token or a
// subscription that is gone or ended (a used-up link).
func (s *Server) confirmSubject(w http.ResponseWriter, r *http.Request) (*store.Subscription, *confirmData, bool) {
	tok := r.PathValue("token")
	id, err := s.Tokens.Verify(tok, token.Confirm, s.Clock.Now())
	if err != nil {
		s.tokenError(w, r, err, "confirm a subscription")
		return nil, nil, false
	}
	sub, d, err := s.loadConfirm(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		s.linkGone(w, r, "This subscription no longer exists",
			"The subscription this link was for has been removed. You can sign up again on the start page.")
		return nil, nil, false
	}
	if err != nil {
		s.serverError(w, r, err)
		return nil, nil, false
	}
	if sub.State == store.SubEnded {
		s.linkGone(w, r, "This link was already used",
			"This subscription was confirmed and has since ended, so the link no longer works. To get the feed again, sign up again on the start page.")
		return nil, nil, false
	}
	d.Token = tok
	return sub, d, true
}

func (s *Server) loadConfirm(ctx context.Context, subID int64) (*store.Subscription, *confirmData, error) {
	sub, err := s.Store.SubscriptionByID(ctx, subID)
	if err != nil {
		return nil, nil, err
	}
	feed, err := s.Store.FeedByID(ctx, sub.FeedID)
	if err != nil {
		return nil, nil, err
	}
	u, err := s.Store.UserByID(ctx, sub.UserID)
	if err != nil {
		return nil, nil, err
	}
	d := &confirmData{Email: u.Email, FeedTitle: feed.Title, FeedURL: feed.URL}
	if sub.DigestID != nil {
		if dg, err := s.Store.AccountDigest(ctx, u.ID, *sub.DigestID); err == nil {
			d.DigestName = dg.Name
		}
	}
	return sub, d, nil
}

// confirmPage is GET /confirm/{token}: it shows what will be confirmed and a
// button. Mail scanners follow links; only the POST confirms.
func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) {
	sub, d, ok := s.confirmSubject(w, r)
	if !ok {
		return
	}
	if sub.State == store.SubActive {
		d.Done, d.Already = true, true
		d.AccountURL = s.links.Account(sub.UserID, s.Clock.Now())
	}
	s.render(w, r, http.StatusOK, "confirm", "Confirm your subscription", d)
}

// confirm is POST /confirm/{token}: the subscription becomes active, the
// person confirmed, and a first confirmation grants the trial credits. Doing
// it twice is harmless.
func (s *Server) confirm(w http.ResponseWriter, r *http.Request) {
	sub, d, ok := s.confirmSubject(w, r)
	if !ok {
		return
	}
	d.Already = sub.State == store.SubActive
	granted, err := s.subs.Confirm(r.Context(), sub, store.ConfirmedByLink)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d.Trial = granted
	d.Done = true
	d.AccountURL = s.links.Account(sub.UserID, s.Clock.Now())
	s.render(w, r, http.StatusOK, "confirm", "You are subscribed", d)
}
