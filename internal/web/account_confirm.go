package web

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/store"
)

// accountConfirmAll is POST /account/{token}/subscriptions/confirm-all:
// confirm every subscription of the person still waiting (an OPML import
// of hundreds of feeds is one button, not hundreds).
func (s *Server) accountConfirmAll(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	subs, err := s.Store.SubscriptionsOfUser(r.Context(), u.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	for i := range subs {
		if subs[i].State != store.SubPending {
			continue
		}
		if _, err := s.subs.Confirm(r.Context(), &subs[i].Subscription, store.ConfirmedByAccount); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	backToAccount(w, r, tok, "confirmedall", "subscriptions")
}

func (s *Server) accountConfirm(w http.ResponseWriter, r *http.Request) {
	_, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	if _, err := s.subs.Confirm(r.Context(), sub, store.ConfirmedByAccount); err != nil {
		s.serverError(w, r, err)
		return
	}
	backToAccount(w, r, tok, "confirmed", "subscriptions")
}
