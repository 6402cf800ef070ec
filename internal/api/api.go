package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// Prefix is the path every API route starts with.
const Prefix = "/api/v1/"

// Deps is what the API needs; package web fills it in.
type Deps struct {
	Store *store.Store
	// Subs runs the subscription use cases (the same service the signup
	// form uses).
	Subs  *subscribe.Service
	Clock clock.Clock
	Log   *slog.Logger
	// Preview makes previews (the web pages' service); nil answers 503.
	Preview *preview.Service
	// Limit is each token's rate limit; the zero value means
	// DefaultLimit.
	Limit Limit
	// FetchBudget is the budget of new feeds a request may have fetched
	// for account u (package web's, shared with its forms and OPML
	// upload); nil: no limit.
	FetchBudget func(r *http.Request, u *store.User) subscribe.Budget
	// AllowPrivate is FEEDMAIL_ALLOW_PRIVATE_NETWORKS: a channel target
	// with a token may then be plain http (channels.Choose).
	AllowPrivate bool
	// OperatorTokenSHA256 is FEEDMAIL_OPERATOR_TOKEN_SHA256: the hex
	// SHA-256 of the token the operator's routes take; empty closes them.
	OperatorTokenSHA256 string
	// ImportMaxBytes caps a bulk import's body (FEEDMAIL_API_IMPORT_MAX_BYTES);
	// 0 means config.DefaultImportMaxBytes.
	ImportMaxBytes int64
}

// Limit is a token bucket: Burst requests at once, then one every Every.
type Limit struct {
	Every time.Duration
	Burst int
}

// DefaultLimit lets a token make 60 requests at once, then 2 a second.
var DefaultLimit = Limit{Every: 500 * time.Millisecond, Burst: 60}

// lastUseEvery is how stale a token's recorded last use may get: it is
// written at most once per token per this interval.
const lastUseEvery = time.Minute

// Server serves the API.
type Server struct {
	Deps
	mux     *http.ServeMux
	buckets *buckets
	doc     []byte // the OpenAPI document served (Document)
}

// New returns the API server.
func New(d Deps) *Server {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Limit == (Limit{}) {
		d.Limit = DefaultLimit
	}
	if d.ImportMaxBytes <= 0 {
		d.ImportMaxBytes = config.DefaultImportMaxBytes
	}
	s := &Server{Deps: d, mux: http.NewServeMux(), buckets: newBuckets(d.Limit)}
	doc, err := Document(channels.All().Names())
	if err != nil {
		d.Log.Error("the API's OpenAPI document", "err", err)
		doc = openAPIFile
	}
	s.doc = doc
	s.routes()
	return s
}

// route is one API route: its method and path (as in openapi.json), the
// query parameters it takes (any other is refused, so a typo is not
// silently ignored) and its handler; public routes need no token, the
// operator's take the operator token only (op is their handler).
type route struct {
	method, path     string
	public, operator bool
	query            []string
	h                func(w http.ResponseWriter, r *http.Request, u *store.User)
	op               http.HandlerFunc
}

// pageParams are the query parameters of a list (page.go).
var pageParams = []string{"limit", "cursor"}

// routeTable lists every route, in the order openapi.json documents them.
func (s *Server) routeTable() []route {
	return []route{
		{method: "GET", path: "openapi.json", public: true},
		{method: "GET", path: "subscriptions", query: pageParams, h: s.listSubscriptions},
		{method: "POST", path: "subscriptions", h: s.createSubscription},
		{method: "GET", path: "subscriptions/{id}", h: s.getSubscription},
		{method: "PATCH", path: "subscriptions/{id}", h: s.patchSubscription},
		{method: "DELETE", path: "subscriptions/{id}", h: s.deleteSubscription},
		{method: "GET", path: "digests", h: s.listDigests},
		{method: "POST", path: "digests", h: s.createDigest},
		{method: "GET", path: "digests/{id}", h: s.getDigest},
		{method: "PATCH", path: "digests/{id}", h: s.patchDigest},
		{method: "GET", path: "feeds/{id}", h: s.feedStatus},
		{method: "GET", path: "balance", h: s.balance},
		{method: "GET", path: "ledger", query: pageParams, h: s.ledger},
		{method: "GET", path: "export", h: s.export},
		{method: "GET", path: "preview", query: []string{"feed", "format", "delivery", "tz"}, h: s.previewEmail},
		{method: "POST", path: "operator/readers:import", operator: true, query: []string{"confirmed", "batch"}, op: s.importReaders},
	}
}

func (s *Server) routes() {
	for _, rt := range s.routeTable() {
		pattern := rt.method + " " + Prefix + rt.path
		if rt.public {
			s.mux.HandleFunc(pattern, s.openAPI)
			continue
		}
		if rt.operator {
			s.mux.Handle(pattern, s.operatorOnly(rt))
			continue
		}
		s.mux.Handle(pattern, s.authenticated(rt))
	}
}

// ServeHTTP answers every request under Prefix: a path no route has is a
// 404 problem, a known path with another method a 405 problem, and a
// panic a 500 problem.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.Log.Error("panic in api handler", "path", r.URL.Path, "panic", v)
			writeProblem(w, problem{Status: http.StatusInternalServerError, Detail: "feedmail hit an error it did not expect"})
		}
	}()
	w.Header().Set("Cache-Control", "no-store")
	if _, pattern := s.mux.Handler(r); pattern == "" {
		if allow := s.allowed(r); allow != "" {
			w.Header().Set("Allow", allow)
			writeProblem(w, problem{Status: http.StatusMethodNotAllowed,
				Detail: r.Method + " is not allowed here; this path takes " + allow})
			return
		}
		writeProblem(w, problem{Status: http.StatusNotFound, Detail: "no API route " + r.URL.Path})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// allowed returns the methods r's path has routes for, comma-separated.
func (s *Server) allowed(r *http.Request) string {
	var out string
	for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := s.mux.Handler(r2); pattern != "" {
			if out != "" {
				out += ", "
			}
			out += m
		}
	}
	return out
}
