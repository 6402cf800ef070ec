package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// signInData is the "email me a sign-in link" form.
type signInData struct {
	Email string
	Error string
	Sent  bool
}

// signInPage is GET /signin.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", "Email me a sign-in link", signInData{})
}

// signIn is POST /signin: queue a sign-in link when the address has an
// account. The answer is the same either way, so the form does not tell
// strangers who uses feedmail.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	d := signInData{Email: clip(strings.TrimSpace(r.PostForm.Get("email")), 320)}
	email, msg := subscribe.CheckEmail(d.Email)
	now := s.Clock.Now()
	if s.limited(w, r, key("signin-ip", clientIP(r), s.lim.SignInPerIP)) {
		return
	}
	if msg != "" {
		d.Error = msg
		s.render(w, r, http.StatusUnprocessableEntity, "signin", "Email me a sign-in link", d)
		return
	}
	if s.limited(w, r, key("signin-address", strings.ToLower(email), s.lim.SignInPerAddress)) {
		return
	}
	u, err := s.Store.UserByEmail(r.Context(), email)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.Log.Info("sign-in link asked for an unknown address")
	case err != nil:
		s.serverError(w, r, err)
		return
	default:
		key, n := notices.SignIn(s.links, now, u.ID, u.Email)
		if _, err := s.Store.QueueNotice(r.Context(), u.ID, key, n); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	d.Email, d.Sent = email, true
	s.render(w, r, http.StatusOK, "signin", "Check your inbox", d)
}
