package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/pause"
	"github.com/feedmail/feedmail/internal/store"
)

// accountPause is POST /account/{token}/pause: pause the subscription
// "sub" (an id of the person's), or the whole account without it, until
// "until" (a date from the page's date field, or anything
// pause.ParseUntil reads; empty: until resumed).
func (s *Server) accountPause(w http.ResponseWriter, r *http.Request) {
	u, tok, subID, ok := s.pausePost(w, r)
	if !ok {
		return
	}
	loc, err := time.LoadLocation(u.Timezone)
	if err != nil {
		loc = time.UTC
	}
	end, err := pause.ParseUntil(r.PostForm.Get("until"), s.Clock.Now(), loc)
	if err == nil {
		err = s.Store.Pause(r.Context(), u.ID, subID, end)
	}
	switch {
	case errors.Is(err, pause.ErrPast) || errors.Is(err, store.ErrPauseInPast):
		s.renderMessage(w, r, http.StatusBadRequest, "Pick a later date",
			"A pause has to end in the future. Leave the date empty to pause until you resume.",
			pageLink{"Back to your account", links.Fill(links.PathAccount, tok)})
	case errors.Is(err, pause.ErrBadUntil):
		s.renderMessage(w, r, http.StatusBadRequest, "Pick a date",
			"Give the day the pause ends, or leave it empty to pause until you resume.",
			pageLink{"Back to your account", links.Fill(links.PathAccount, tok)})
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "paused", pauseAnchor(subID))
	}
}

// accountResume is POST /account/{token}/resume: end the pause of the
// subscription "sub", or of the whole account without it.
func (s *Server) accountResume(w http.ResponseWriter, r *http.Request) {
	u, tok, subID, ok := s.pausePost(w, r)
	if !ok {
		return
	}
	_, err := s.Store.Resume(r.Context(), u.ID, subID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "resumed", pauseAnchor(subID))
	}
}

// pausePost starts the pause and resume forms: it verifies the account
// token, reads the form and the optional subscription id "sub" (0: the
// whole account). It answers the request itself on failure.
func (s *Server) pausePost(w http.ResponseWriter, r *http.Request) (*store.User, string, int64, bool) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return nil, "", 0, false
	}
	v := r.PostForm.Get("sub")
	if v == "" {
		return u, tok, 0, true
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		s.notFound(w, r)
		return nil, "", 0, false
	}
	return u, tok, id, true
}

// pauseAnchor is where the account page opens after a pause form.
func pauseAnchor(subID int64) string {
	if subID == 0 {
		return "pause"
	}
	return "subscriptions"
}

// pauseWords says a pause stored as (at, until) in the person's zone:
// "Paused until Thu 24 Dec 2026 00:00 Europe/Berlin", "Paused until you
// resume", or "" when no pause lasts at now.
func pauseWords(at, until *time.Time, now time.Time, zone string) string {
	switch {
	case !store.IsPaused(at, until, now):
		return ""
	case until == nil:
		return "Paused until you resume"
	}
	return "Paused until " + localTime(*until, zone)
}
