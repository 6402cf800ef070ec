package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// accountUser verifies the account token in the path and loads the person.
// It answers the request itself on failure.
func (s *Server) accountUser(w http.ResponseWriter, r *http.Request) (*store.User, string, bool) {
	tok := r.PathValue("token")
	u, _, ok := s.accountLink(w, r, tok, "open your account")
	return u, tok, ok
}

// accountLink verifies account token tok, loads the person and applies the
// account link's rules (links.CheckAccount: signed out everywhere since,
// lifetime of old links). It returns whether the link is fresh enough to
// make an API token; on failure it answers the request itself, saying it
// could not be used to what.
func (s *Server) accountLink(w http.ResponseWriter, r *http.Request, tok, what string) (*store.User, bool, bool) {
	now := s.Clock.Now()
	c, err := s.Tokens.VerifyClaims(tok, token.Account, now)
	if err != nil {
		s.tokenError(w, r, err, what)
		return nil, false, false
	}
	u, err := s.Store.UserByID(r.Context(), c.Subject)
	if errors.Is(err, store.ErrNotFound) {
		s.linkGone(w, r, "This account no longer exists", "There is no account for this link any more. You can sign up again on the start page.")
		return nil, false, false
	}
	if err != nil {
		s.serverError(w, r, err)
		return nil, false, false
	}
	fresh, err := links.CheckAccount(c, u.SignedOutAt, now)
	if errors.Is(err, links.ErrSignedOut) {
		s.linkGone(w, r, "This link was signed out", "Every link to this account made before the last “sign out everywhere” stopped working. Ask for a fresh sign-in link below.")
		return nil, false, false
	}
	if err != nil {
		s.tokenError(w, r, err, what)
		return nil, false, false
	}
	return u, fresh, true
}

// accountSignOut is POST /account/{token}/sign-out: "sign out everywhere".
// Every account link issued until now stops working, this one included,
// and every API token is revoked (store.SignOutEverywhere): someone who
// fears a link leaked wants whatever it could have made gone too. The
// person gets a fresh sign-in link by email to come back.
func (s *Server) accountSignOut(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	now := s.Clock.Now()
	revoked, err := s.Store.SignOutEverywhere(r.Context(), u.ID, now)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.Log.Info("account signed out everywhere", "user", u.ID, "api_tokens_revoked", revoked)
	text := "Every link to your account, this one included, stopped working"
	if revoked > 0 {
		text += ", and your API tokens were revoked"
	}
	s.render(w, r, http.StatusOK, "message", "Signed out everywhere", messageData{Heading: "Signed out everywhere",
		Text: text + ". To come back, ask for a sign-in link below.", SignIn: true})
}

// accountFreshLink is POST /account/{token}/fresh-link: email the person a
// sign-in link, which is fresh enough to make an API token.
func (s *Server) accountFreshLink(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	now := s.Clock.Now()
	if s.limited(w, r, key("signin-address", strings.ToLower(u.Email), s.lim.SignInPerAddress)) {
		return
	}
	key, n := notices.SignIn(s.links, now, u.ID, u.Email)
	if _, err := s.Store.QueueNotice(r.Context(), u.ID, key, n); err != nil {
		s.serverError(w, r, err)
		return
	}
	backToAccount(w, r, tok, "freshlink", "api")
}

// freshLink reports whether account token tok of u, already accepted by
// accountLink, is fresh enough at now to make an API token.
func (s *Server) freshLink(tok string, u *store.User, now time.Time) bool {
	c, err := s.Tokens.VerifyClaims(tok, token.Account, now)
	if err != nil {
		return false
	}
	fresh, err := links.CheckAccount(c, u.SignedOutAt, now)
	return err == nil && fresh
}
