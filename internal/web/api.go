package web

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// apiHandler is the JSON API (package api) over this server's store and
// subscription service, so a subscription made through it gets the same
// checks, feed baseline and budget of new feeds as the signup form.
func (s *Server) apiHandler() http.HandlerFunc {
	budget := func(r *http.Request, u *store.User) subscribe.Budget { return s.fetchBudget(r, u.ID) }
	return api.New(api.Deps{Store: s.Store, Subs: s.subs, Clock: s.Clock, Log: s.Log, Preview: s.preview, FetchBudget: budget,
		AllowPrivate: s.Config.AllowPrivateNetworks, OperatorTokenSHA256: s.Config.OperatorTokenSHA256,
		ImportMaxBytes: s.Config.ImportMaxBytes}).ServeHTTP
}
