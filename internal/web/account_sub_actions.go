package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// accountDelivery is POST /account/{token}/subscriptions/{id}/delivery:
// delivery=instant or delivery=digest-ID.
func (s *Server) accountDelivery(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	var digestID *int64
	if v := r.PostForm.Get("delivery"); v != deliveryInstant {
		id, err := strconv.ParseInt(strings.TrimPrefix(v, "digest-"), 10, 64)
		if err != nil || !strings.HasPrefix(v, "digest-") {
			s.renderMessage(w, r, http.StatusBadRequest, "Pick a delivery", "Choose instant delivery or one of your digests.",
				pageLink{"Back to your account", links.Fill(links.PathAccount, tok)})
			return
		}
		digestID = &id
	}
	err := s.Store.SetSubscriptionDelivery(r.Context(), u.ID, sub.ID, digestID)
	if errors.Is(err, store.ErrNotFound) {
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	backToAccount(w, r, tok, "delivery", "subscriptions")
}

// accountUnsubscribe is POST /account/{token}/subscriptions/{id}/unsubscribe.
func (s *Server) accountUnsubscribe(w http.ResponseWriter, r *http.Request) {
	_, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	if _, err := s.Store.EndSubscription(r.Context(), sub.ID, "unsubscribed on the account page"); err != nil {
		s.serverError(w, r, err)
		return
	}
	backToAccount(w, r, tok, "unsubscribed", "subscriptions")
}

// accountConfirm is POST /account/{token}/subscriptions/{id}/confirm: a
// pending subscription confirmed from the account page (the account link
// already proves the address).
