package web

import (
	"errors"
	"net/http"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// accountData is GET /account/{token}/export: everything kept about the
// person (model.AccountExport, the same JSON as `feedmail account export`)
// as a download.
func (s *Server) accountData(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	ex, err := s.Store.ExportAccount(r.Context(), u)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	b, err := ex.JSON()
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="feedmail-my-data.json"`)
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// deleteData is the "delete my account" confirmation page.
type deleteData struct {
	Token       string
	Email       string
	Subs        int // subscriptions not ended
	Digests     int
	Balance     int64
	AccountURL  string
	DownloadURL string
}

// accountDeletePage is GET /account/{token}/delete: what deleting erases,
// and the button that does it. It changes nothing.
func (s *Server) accountDeletePage(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	subs, err := s.Store.SubscriptionsOfUser(r.Context(), u.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	digests, err := s.Store.DigestsOfUser(r.Context(), u.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "delete", "Delete your account", deleteData{Token: tok, Email: u.Email,
		Subs: len(subs), Digests: len(digests), Balance: u.Balance,
		AccountURL: links.Fill(links.PathAccount, tok), DownloadURL: links.Fill(links.PathAccountData, tok)})
}

// accountDelete is POST /account/{token}/delete: erases the account
// (store.DeleteUser); the account link stops working at once.
func (s *Server) accountDelete(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	del, err := s.Store.DeleteUser(r.Context(), u.ID)
	if errors.Is(err, store.ErrNotFound) {
		s.linkGone(w, r, "This account no longer exists", "There is no account for this link any more. You can sign up again on the start page.")
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.Log.Info("account deleted on the account page", "user", u.ID, "subscriptions", del.Subscriptions,
		"digests", del.Digests, "pending_mail", del.PendingMail)
	s.renderMessage(w, r, http.StatusOK, "Your account is deleted",
		"We erased your address, your feeds, your digests and the email not sent yet. No more email will come from us. "+
			"The record of credits and payments stays for our accounts, without your address.",
		pageLink{"Go to the start page", "/"})
}
