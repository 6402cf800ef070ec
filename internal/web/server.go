// Package web owns feedmail's HTTP side: the server-rendered pages and forms,
// the public feed status, WebSub callbacks, pings, the payments webhook, the
// email services' bounce webhooks, /healthz and /metrics, with their protections (security headers,
// cross-origin checks, rate limits, body caps). Handlers read requests and
// render answers; they must not run SQL directly (they go through package
// store) nor hold the rules of a use case (package subscribe does), and they
// take routes from links.Routes and email words from package notices. The
// rules the pages follow are in docs/design.md.
package web

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/proof"
	"github.com/feedmail/feedmail/internal/ratelimit"
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
	// Limits are the rate limits on signup, sign-in links and the fetches
	// of new feeds, and the signup form's proof of work. Nil means
	// DefaultLimits().
	Limits *Limits
	// PreviewLimits are the rates of previews; nil means
	// preview.DefaultLimits().
	PreviewLimits *preview.Limits
	// Prices are the prices the pages state. Nil means billing.Standard(),
	// what is charged; tests set others to show no page writes its own.
	Prices *billing.Prices
}

// Server routes requests to handlers.
type Server struct {
	Deps
	mux   *http.ServeMux
	root  http.Handler
	pages map[string]*template.Template
	files map[string]staticFile
	links links.Links
	subs  *subscribe.Service
	mover Mover // see SetMover
	// preview makes the previews of the signup, account and publisher
	// pages and of the API.
	preview *preview.Service
	// lim are the rate limits and limiter applies them (counters in the
	// database); proofKey signs the signup form's challenges (nil: no
	// proof asked).
	lim      Limits
	limiter  *ratelimit.Limiter
	proofKey []byte
	// status caches rendered public status pages (see statusCacheTTL).
	status *pageCache
	// styleURL and scriptURL carry a content hash so browsers may cache
	// them for long.
	styleURL, scriptURL, previewScriptURL, proofURL string
	// paymentsOn is set by MountCredits when Stripe is configured: the
	// account page offers to buy credits only then.
	paymentsOn bool
}

// SetBaseline makes signup and OPML import record the feed document they
// fetched as what the person saw (subscribe.Service.Baseline). Call it
// before serving.
func (s *Server) SetBaseline(b subscribe.Baseliner) { s.subs.Baseline = b }

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
	s := &Server{Deps: d, mux: http.NewServeMux(), lim: lim, limiter: &ratelimit.Limiter{Counters: d.Store, Clock: d.Clock},
		status: newPageCache(statusCacheTTL, statusCacheMax)}
	if d.Tokens != nil {
		s.links = links.New(d.Config.BaseURL, d.Tokens, d.Config.From)
		if lim.Proof.Bits > 0 {
			s.proofKey = d.Tokens.Derive(proof.KeyLabel)
		}
	}
	s.subs = &subscribe.Service{Store: d.Store, Links: s.links, Clock: d.Clock, Fetch: d.Fetcher,
		TrialCredits: d.Config.TrialCredits, Log: d.Log}
	s.preview = s.newPreview()
	if err := s.loadAssets(); err != nil {
		panic("web: " + err.Error())
	}
	s.register(links.GroupHealth, map[string]http.HandlerFunc{"healthz": s.healthz})
	if d.Metrics != nil && d.Config.MetricsListen == "" { // else serve answers it on its own listener
		s.register(links.GroupMetrics, map[string]http.HandlerFunc{"metrics": d.Metrics.Handler().ServeHTTP})
	}
	s.routes()
	s.root = s.middleware(s.orNotFound(s.mux))
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
