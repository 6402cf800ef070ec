package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
)

// settingsForm is a subscription's filters-and-format form: Include and
// Exclude are comma-separated terms (package filter), Format a
// store.Format*. Error says what is wrong with what was typed.
type settingsForm struct {
	Include, Exclude, Format string
	Error                    string
}

// formatChoices are the format select's options, in order.
var formatChoices = []struct{ Value, Label string }{
	{store.FormatFull, "The whole post"},
	{store.FormatSummary, "A summary: its first 60 words, no images"},
	{store.FormatTitle, "The title and link only"},
	{store.FormatArticle, "The whole article, read from the post's page (for feeds that send only the start)"},
}

// maxTermsField is the longest filter field read from a form, in
// characters: the filter's own limits say the rest.
const maxTermsField = 12000

// orFull is the format f, with the default for "".
func orFull(f string) string {
	if f == "" {
		return store.FormatFull
	}
	return f
}

// accountSettings is POST /account/{token}/subscriptions/{id}/settings:
// include, exclude and format. A bad term or format re-renders the page
// (422) with the form as typed and the problem next to it; nothing
// changes.
func (s *Server) accountSettings(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	f := settingsForm{
		Include: clip(strings.TrimSpace(r.PostForm.Get("include")), maxTermsField),
		Exclude: clip(strings.TrimSpace(r.PostForm.Get("exclude")), maxTermsField),
		Format:  clip(r.PostForm.Get("format"), 40),
	}
	_, err := s.Store.SetSubscriptionControls(r.Context(), u.ID, sub.ID, store.Controls{Include: &f.Include, Exclude: &f.Exclude, Format: &f.Format})
	switch {
	case errors.Is(err, store.ErrBadControls):
		f.Error = settingsProblem(err)
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
		return
	case err != nil:
		s.serverError(w, r, err)
		return
	default:
		backToAccount(w, r, tok, "settings", "subscriptions")
		return
	}
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	for i := range d.Subs {
		if d.Subs[i].ID == sub.ID {
			d.Subs[i].Settings = f
		}
	}
	s.render(w, r, http.StatusUnprocessableEntity, "account", "Your feedmail", d)
}

// settingsProblem is the reader's words for a store.ErrBadControls error:
// its message without the sentinel's prefix.
func settingsProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), store.ErrBadControls.Error()+": ")
	if msg == "" {
		return "check the filters and the format"
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}
