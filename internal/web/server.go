// Package web serves feedmail's HTTP side: pages, forms, the public feed status,
// WebSub callbacks, pings, payments webhooks, /healthz and /metrics. Handlers
// never run SQL themselves; they go through package store.
//
// # Pages
//
// Pages are server-rendered html/template files from templates/pages, parsed
// once in New, styled by one stylesheet served from /static/. They work
// without JavaScript; one small script (/static/tz.js) only pre-selects the
// browser's time zone in the signup form.
//
// # Protection (choices where DESIGN.md is silent)
//
//   - Every unsafe request goes through http.CrossOriginProtection, except
//     the endpoints other machines call: POST /unsubscribe/{token} (RFC 8058
//     one-click, POSTed by mail providers), /webhooks/stripe, /websub/,
//     /ping and /RPC2. The one-click POST is safe to exempt: its token is the
//     authorisation and ending a subscription is what the link is for.
//   - Rate limits are token buckets per client IP (the TCP peer address:
//     feedmail does not trust X-Forwarded-For, so behind a reverse proxy the
//     proxy's address shares one bucket; raise Limits accordingly) and per
//     email address, on signup and on sign-in links. Over the limit a person
//     gets a 429 page with Retry-After.
//   - A honeypot field ("website", hidden from people and screen readers) on
//     the signup form: a form that fills it gets the normal "check your inbox"
//     page and nothing happens.
//   - Bodies are capped with http.MaxBytesReader: 32 KiB for forms, 11 MiB for
//     OPML uploads.
//   - Every response carries a Content-Security-Policy without inline script
//     or style (default-src 'none'; only our own stylesheet, script and
//     images; frame-ancestors 'none'; form-action 'self' https: so that a
//     checkout form may continue to the payment provider),
//     X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer (links
//     carry tokens in their paths) and X-Frame-Options: DENY. Pages reached
//     by a token are Cache-Control: no-store.
package web

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/token"
)

// Deps is what the handlers need; cmd/feedmail fills it in.
type Deps struct {
	Store   *store.Store
	Config  config.Config
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	Tokens  *token.Signer

	// Fetcher fetches feeds at signup and OPML import. Nil makes one from
	// Config (private networks allowed only with AllowPrivateNetworks).
	Fetcher *fetcher.Client
	// Limits are the rate limits on signup and sign-in links. Nil means
	// DefaultLimits().
	Limits *Limits
}

// Server routes requests to handlers.
type Server struct {
	Deps
	mux   *http.ServeMux
	root  http.Handler
	pages map[string]*template.Template
	files map[string]staticFile
	links links.Links
	fetch *fetcher.Client
	subs  *subscribe.Service
	rl    rateLimits
	// status caches rendered public status pages (see statusCacheTTL).
	status *pageCache
	// styleURL and scriptURL carry a content hash so browsers may cache
	// them for long.
	styleURL, scriptURL string
}

// New builds the server and its routes. It panics if the embedded page
// templates do not parse (a build defect, caught by the tests).
func New(d Deps) *Server {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Fetcher == nil {
		d.Fetcher = fetcher.New(fetcher.Config{
			BaseURL:      d.Config.BaseURL,
			AllowPrivate: d.Config.AllowPrivateNetworks,
			Timeout:      signupFetchTimeout,
		})
	}
	lim := DefaultLimits()
	if d.Limits != nil {
		lim = *d.Limits
	}
	s := &Server{Deps: d, mux: http.NewServeMux(), fetch: d.Fetcher, rl: newRateLimits(lim),
		status: newPageCache(statusCacheTTL, statusCacheMax)}
	if d.Tokens != nil {
		s.links = links.New(d.Config.BaseURL, d.Tokens, d.Config.From)
	}
	s.subs = &subscribe.Service{Store: d.Store, Links: s.links, Clock: d.Clock, Fetch: d.Fetcher,
		TrialCredits: d.Config.TrialCredits, Log: d.Log}
	if err := s.loadAssets(); err != nil {
		panic("web: " + err.Error())
	}
	s.register(links.GroupHealth, map[string]http.HandlerFunc{"healthz": s.healthz})
	if d.Metrics != nil {
		s.register(links.GroupMetrics, map[string]http.HandlerFunc{"metrics": d.Metrics.Handler().ServeHTTP})
	}
	s.routes()
	s.root = s.middleware(s.mux)
	return s
}

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.root }

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
