package web

import (
	"net/http"
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
