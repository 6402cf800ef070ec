package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/poller"
)

// Mover moves every reader of a feed to its new address
// (poller.Poller.MoveFeed).
type Mover interface {
	MoveFeed(ctx context.Context, fromURL, toURL, kind string, dryRun bool) (*poller.MoveReport, error)
}

// SetMover lets verified publishers move their feed's readers on their
// page. Without one the form says moving is not available here.
func (s *Server) SetMover(m Mover) { s.mover = m }

// publisherMove is POST /account/{token}/publisher/feeds/{id}/move: the
// verified publisher of feed id moves its readers to the address in "to".
// The same-feed check runs first: with posts in common the readers move at
// once; without, the page shows the warning and a button that moves them
// anyway ("confirm").
func (s *Server) publisherMove(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	o, err := s.Store.FeedOwnerOf(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && o.UserID != u.ID) {
		http.NotFound(w, r) // another publisher's feed tells nothing
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	f, err := s.Store.FeedByID(r.Context(), id)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	raw := clip(r.PostForm.Get("to"), 2048)
	to, msg := subscribe.NormalizeFeedURL(raw)
	switch {
	case s.mover == nil:
		msg = "Moving readers is not available on this feedmail: ask its operator."
	case msg == "" && to == f.URL:
		msg = "That is the feed's current address."
	}
	if msg != "" {
		s.publisherProblem(w, r, u, tok, raw, msg)
		return
	}
	rep, err := s.mover.MoveFeed(r.Context(), f.URL, to, store.MoveOwner, r.PostForm.Get("confirm") != "1")
	if err != nil {
		s.publisherProblem(w, r, u, tok, raw, "Not moved: "+moveProblem(err))
		return
	}
	if !rep.Moved && rep.Warning == "" {
		rep, err = s.mover.MoveFeed(r.Context(), f.URL, to, store.MoveOwner, false)
		if err != nil {
			s.publisherProblem(w, r, u, tok, raw, "Not moved: "+moveProblem(err))
			return
		}
	}
	if !rep.Moved {
		d, err := s.publisherView(r.Context(), u, tok)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		d.Problem, d.URL, d.MoveFeedID, d.MoveTo = "Check this address: "+rep.Warning+".", raw, id, to
		s.render(w, r, http.StatusOK, "publisher", "Feeds you publish", d)
		return
	}
	http.Redirect(w, r, links.Fill(links.PathPublisher, tok)+"?done=moved#owned", http.StatusSeeOther)
}

// moveProblem says in a line why a move was refused.
func moveProblem(err error) string {
	switch {
	case errors.Is(err, poller.ErrNotMovable):
		return "feedmail cannot move readers to that address."
	case fetcher.KindOf(err) != fetcher.KindOther:
		return subscribe.FetchProblem(err)
	}
	return err.Error()
}
