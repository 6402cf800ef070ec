package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/metrics"
)

func TestMiddleware(t *testing.T) {
	m := metrics.New()
	h := newHarness(t, func(d *Deps) { d.Metrics = m })
	h.srv.mux.Handle("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))

	w := h.get("/boom")
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "Something went wrong") ||
		w.Header().Get("Content-Security-Policy") == "" {
		t.Fatalf("panic: %d %q", w.Code, w.Body.String())
	}
	h.get("/")
	h.get("/")
	if n := counter(t, m.HTTPRequests.WithLabelValues("GET /{$}", "200")); n != 2 {
		t.Fatalf("GET / counted %v times", n)
	}
	if n := counter(t, m.HTTPRequests.WithLabelValues("GET /boom", "500")); n != 1 {
		t.Fatalf("panic counted %v times", n)
	}
	if w := h.get("/static/nope.css"); w.Code != http.StatusNotFound {
		t.Fatalf("missing static file: %d", w.Code)
	}
	w = h.get(h.srv.styleURL)
	if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") || w.Header().Get("Content-Type") != "text/css; charset=utf-8" {
		t.Fatalf("stylesheet: %d %v", w.Code, w.Header())
	}
	w = h.do(req{method: "GET", path: "/static/style.css", header: map[string]string{"If-None-Match": w.Header().Get("ETag")}})
	if w.Code != http.StatusNotModified {
		t.Fatalf("conditional stylesheet: %d", w.Code)
	}
	if w := h.do(req{method: "HEAD", path: "/"}); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Fatalf("HEAD /: %d, %d bytes", w.Code, w.Body.Len())
	}
}

func counter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestHSTS: an https install sends Strict-Transport-Security on every
// response (pages, errors, static files, the API, machine routes); an http
// one never does.
func TestHSTS(t *testing.T) {
	for _, base := range []string{"https://feedmail.example", "http://feedmail.test"} {
		h := newHarness(t, func(d *Deps) { d.Config.BaseURL = base })
		for _, r := range []req{
			{method: "GET", path: "/"}, {method: "GET", path: "/nope"}, {method: "GET", path: h.srv.styleURL},
			{method: "GET", path: "/healthz"}, {method: "GET", path: "/api/v1/balance"},
			{method: "POST", path: "/subscriptions", form: url.Values{}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{method: "GET", path: "/account/garbage"},
		} {
			got := h.do(r).Header().Get("Strict-Transport-Security")
			want := ""
			if strings.HasPrefix(base, "https:") {
				want = "max-age=31536000"
			}
			if got != want {
				t.Errorf("%s %s %s: Strict-Transport-Security %q, want %q", base, r.method, r.path, got, want)
			}
		}
	}
}
