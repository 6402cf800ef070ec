// Package web serves feedmail's HTTP side: pages, forms, the public feed status,
// WebSub callbacks, pings, payments webhooks, /healthz and /metrics. Handlers
// never run SQL themselves; they go through package store.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/clock"
	"github.com/feedmail/feedmail/config"
	"github.com/feedmail/feedmail/metrics"
	"github.com/feedmail/feedmail/store"
	"github.com/feedmail/feedmail/token"
)

// Deps is what the handlers need; cmd/feedmail fills it in.
type Deps struct {
	Store   *store.Store
	Config  config.Config
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	Tokens  *token.Signer
}

// Server routes requests to handlers.
type Server struct {
	Deps
	mux *http.ServeMux
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{Deps: d, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	if d.Metrics != nil {
		s.mux.Handle("GET /metrics", d.Metrics.Handler())
	}
	return s
}

// Handle adds a route (for handlers that live with the part they serve).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.Store.Ping(ctx); err != nil {
		s.Log.Warn("healthz: database does not answer", "err", err)
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
