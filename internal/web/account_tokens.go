package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// apiTokenRow is one working API token on the account page.
type apiTokenRow struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	LastUsed  *time.Time // recorded at most once a minute
}

// apiTokenRows returns userID's tokens that still work, oldest first.
func (s *Server) apiTokenRows(ctx context.Context, userID int64) ([]apiTokenRow, error) {
	ts, err := s.Store.APITokensOfUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []apiTokenRow
	for _, t := range ts {
		if t.RevokedAt == nil {
			out = append(out, apiTokenRow{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, LastUsed: t.LastUsedAt})
		}
	}
	return out, nil
}

// accountTokenCreate is POST /account/{token}/api-tokens: a new API token
// named by the form's "name", shown on the account page this once (the
// answer is the page itself, never a redirect that would put the token in
// an address). A token outlives the link that made it, so only a link
// issued within links.FreshSignIn may make one; an older link gets 403 and
// the page's offer to email a fresh one.
func (s *Server) accountTokenCreate(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	if !s.freshLink(tok, u, s.Clock.Now()) {
		s.render(w, r, http.StatusForbidden, "message", "Making a token needs a fresh sign-in link", messageData{
			Heading: "Making a token needs a fresh sign-in link",
			Text: "An API token keeps working after the link that made it expires, so it can only be made from a sign-in link " +
				"opened within 15 minutes of being sent. Ask for one on your account page, or below.",
			Links:  []pageLink{{"Back to your account", links.Fill(links.PathAccount, tok) + "#api"}},
			SignIn: true,
		})
		return
	}
	plain, _, err := api.IssueToken(r.Context(), s.Store, u.ID, clip(strings.TrimSpace(r.PostForm.Get("name")), 400))
	if errors.Is(err, api.ErrBadTokenName) {
		s.renderMessage(w, r, http.StatusUnprocessableEntity, "Give the token a shorter name",
			"A token's name is at most "+strconv.Itoa(api.MaxTokenName)+" characters, without control characters.",
			pageLink{"Back to your account", links.Fill(links.PathAccount, tok) + "#api"})
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	d.NewAPIToken = plain
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, "account", "Your feedmail", d)
}

// accountTokenRevoke is POST /account/{token}/api-tokens/{id}/revoke: the
// token stops working at once. A token of someone else's is not found.
func (s *Server) accountTokenRevoke(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return
	}
	switch _, err := s.Store.RevokeAPIToken(r.Context(), u.ID, id); {
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "tokenrevoked", "api")
	}
}
