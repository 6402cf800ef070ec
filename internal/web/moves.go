package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// moveData is the page of a feed's new address: following an offer, or
// going back after a move, before and after the button.
type moveData struct {
	Token    string
	Undo     bool // an undo link (else a follow link)
	Email    string
	Title    string // the feed's name
	From, To string
	Done     bool   // acted now or before
	Outcome  string // what the button did, or what was done before
	Unsub    string // unsubscribe link of the subscription
	Account  string
}

// moveAct is what a move link does once its token is verified.
type moveAct struct {
	undo bool
	id   int64 // reader move id
}

// verifyMove accepts the follow and the undo purposes; the token says which.
func (s *Server) verifyMove(tok string) (moveAct, error) {
	now := s.Clock.Now()
	id, err := s.Tokens.Verify(tok, token.Follow, now)
	if err == nil {
		return moveAct{id: id}, nil
	}
	if !errors.Is(err, token.ErrWrongPurpose) {
		return moveAct{}, err
	}
	id, err = s.Tokens.Verify(tok, token.UndoMove, now)
	return moveAct{undo: true, id: id}, err
}

// movePage is GET /moves/{token}: what the button would do. Mail scanners
// follow links; only the POST acts.
func (s *Server) movePage(w http.ResponseWriter, r *http.Request) { s.move(w, r, false) }

// movePost is POST /moves/{token}: follow the new address, or go back to
// the old one. A second click changes nothing and says what was done.
func (s *Server) movePost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	_ = r.ParseForm()
	s.move(w, r, true)
}

func (s *Server) move(w http.ResponseWriter, r *http.Request, act bool) {
	tok := r.PathValue("token")
	a, err := s.verifyMove(tok)
	if err != nil {
		s.tokenError(w, r, err, "follow a feed's new address")
		return
	}
	rm, m, err := s.Store.ReaderMoveByID(r.Context(), a.id)
	if errors.Is(err, store.ErrNotFound) {
		s.linkGone(w, r, "This subscription no longer exists", "The subscription this link was for has been deleted.")
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if act {
		if a.undo {
			rm, m, err = s.Store.UndoMove(r.Context(), a.id)
		} else {
			rm, m, err = s.Store.AcceptOffer(r.Context(), a.id)
		}
		if err != nil && !errors.Is(err, store.ErrMoveSettled) {
			s.serverError(w, r, err)
			return
		}
	}
	d, err := s.moveData(r.Context(), tok, a.undo, rm, m)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	title := "A feed's new address"
	if a.undo {
		title = "Keep the old address?"
	}
	s.render(w, r, http.StatusOK, "move", title, d)
}

// moveData fills the page for reader move rm of move m.
func (s *Server) moveData(ctx context.Context, tok string, undo bool, rm store.ReaderMove, m store.FeedMove) (moveData, error) {
	from, err := s.Store.FeedByID(ctx, m.FromFeedID)
	if err != nil {
		return moveData{}, err
	}
	to, err := s.Store.FeedByID(ctx, m.ToFeedID)
	if err != nil {
		return moveData{}, err
	}
	d := moveData{Token: tok, Undo: undo, Title: orURL(from.Title, from.URL), From: from.URL, To: to.URL,
		Unsub: s.links.Unsubscribe(rm.SubscriptionID), Account: s.links.Account(rm.UserID, s.Clock.Now())}
	if u, err := s.Store.UserByID(ctx, rm.UserID); err == nil {
		d.Email = u.Email
	}
	switch rm.State {
	case store.ReaderAccepted:
		d.Done, d.Outcome = true, "New posts now come from the new address."
	case store.ReaderUndone:
		d.Done, d.Outcome = true, "You follow the old address again. feedmail polls it and delivers whatever it publishes."
	case store.ReaderDeclined:
		d.Done, d.Outcome = true, "You kept the old address."
	}
	return d, nil
}
