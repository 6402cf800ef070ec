package sites

import (
	"net/http"
	"sync"
)

// Host is one virtual host: its pages by path, what answers any other
// path, and its certificate and ports. Its methods return the Host so a
// setup reads as one chain; they may be called while requests are served.
type Host struct {
	name string

	mu         sync.Mutex
	routes     map[string]http.Handler // key: path, or path?query for one query
	fallback   http.Handler
	expiredTLS bool
	httpOff    bool
	httpsOff   bool
}

func newHost(name string) *Host {
	return &Host{name: name, routes: map[string]http.Handler{}}
}

// Name returns the host name.
func (h *Host) Name() string { return h.name }

// Handle serves path with hd. A path with a query ("/?feed=rss2") matches
// that query only; a path without one matches any query.
func (h *Host) Handle(path string, hd http.Handler) *Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.routes[path] = hd
	return h
}

// File serves body with contentType at path, status 200.
func (h *Host) File(path, contentType string, body []byte) *Host {
	return h.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
}

// HTML serves an HTML page at path, status 200.
func (h *Host) HTML(path, page string) *Host {
	return h.File(path, "text/html; charset=utf-8", []byte(page))
}

// Redirect answers path with status and a Location.
func (h *Host) Redirect(path string, status int, location string) *Host {
	return h.Handle(path, redirect(status, location))
}

// Status answers path with code and body as text/html.
func (h *Host) Status(path string, code int, body string) *Host {
	return h.Handle(path, status(code, body))
}

// Fallback answers every path that has no route of its own (a parked
// domain, a site in maintenance); without one such paths get 404.
func (h *Host) Fallback(hd http.Handler) *Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fallback = hd
	return h
}

// ExpiredCert makes the host present a certificate that expired a week ago
// (on connections made from now on).
func (h *Host) ExpiredCert() *Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expiredTLS = true
	return h
}

// HTTPOff refuses connections to the host's port 80; HTTPSOff to its 443.
func (h *Host) HTTPOff() *Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.httpOff = true
	return h
}

// HTTPSOff refuses connections to the host's port 443.
func (h *Host) HTTPSOff() *Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.httpsOff = true
	return h
}

func (h *Host) ports() (httpOn, httpsOn bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.httpOff, !h.httpsOff
}

// off reports whether the host's port for scheme is turned off.
func (h *Host) off(scheme string) bool {
	httpOn, httpsOn := h.ports()
	return (scheme == "http" && !httpOn) || (scheme == "https" && !httpsOn)
}

func (h *Host) expired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.expiredTLS
}

func (h *Host) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	hd := h.routes[r.URL.RequestURI()]
	if hd == nil {
		hd = h.routes[r.URL.Path]
	}
	if hd == nil {
		hd = h.fallback
	}
	h.mu.Unlock()
	if hd == nil {
		hd = http.NotFoundHandler()
	}
	hd.ServeHTTP(w, r)
}

// redirect answers status with a Location.
func redirect(code int, location string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(code)
	})
}

// status answers code with an HTML body.
func status(code int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	})
}
