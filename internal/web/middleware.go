package web

import (
	"net/http"
	"strconv"
	"strings"
)

// contentSecurityPolicy allows nothing inline: one stylesheet and one script
// of our own, our own images, frames of our own only (the previews), no
// plugins. form-action allows https
// targets besides our own so that a checkout form can continue to the
// payment provider (Chrome applies form-action to redirects).
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-src 'self'; " +
	"form-action 'self' https:; frame-ancestors 'none'; base-uri 'none'"

// hstsValue is the Strict-Transport-Security of an https install: a year,
// this host only (other hosts of the domain may not all speak https), not
// preloaded (that is the operator's own decision).
const hstsValue = "max-age=31536000"

// middleware wraps the mux: metrics and panics outermost, then security
// headers (HSTS on every response when FEEDMAIL_BASE_URL is https), then
// cross-origin protection.
func (s *Server) middleware(next http.Handler) http.Handler {
	hsts := strings.HasPrefix(strings.ToLower(s.Config.BaseURL), "https://")
	cop := http.NewCrossOriginProtection()
	for _, p := range crossOriginExempt() {
		cop.AddInsecureBypassPattern(p)
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderMessage(w, r, http.StatusForbidden, "This form came from another site",
			"For your safety, feedmail only accepts forms sent from its own pages. Open the page on this site and try again.")
	}))
	h := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		if hsts {
			hd.Set("Strict-Transport-Security", hstsValue)
		}
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Log.Error("panic in handler", "path", r.URL.Path, "panic", v)
				if !rec.wrote {
					s.renderMessage(rec, r, http.StatusInternalServerError, "Something went wrong",
						"feedmail hit an error it did not expect. Please try again in a minute.")
				}
			}
			if s.Metrics != nil {
				route := r.Pattern
				if route == "" {
					route = "unmatched"
				}
				code := rec.status
				if code == 0 {
					code = http.StatusOK
				}
				s.Metrics.HTTPRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status code for metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes flushes through (streaming handlers).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
