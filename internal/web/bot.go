package web

import (
	"net/http"
	"strings"
)

// botPage is GET /bot: what the poller's User-Agent points publishers to,
// how it reads their feeds and how to make it stop (templates/pages/bot).
func (s *Server) botPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	s.render(w, r, http.StatusOK, "bot", "feedmail's feed reader", struct{ Base string }{strings.TrimRight(s.links.Base, "/")})
}
