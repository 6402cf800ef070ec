package web

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/api"
)

// apiHandler is the JSON API (package api) over this server's store and
// subscription service, so a subscription made through it gets the same
// checks and feed baseline as the signup form.
func (s *Server) apiHandler() http.HandlerFunc {
	return api.New(api.Deps{Store: s.Store, Subs: s.subs, Clock: s.Clock, Log: s.Log,
		AllowPrivate: s.Config.AllowPrivateNetworks}).ServeHTTP
}
