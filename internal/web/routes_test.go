package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
)

// TestRoutesContract checks that the server, with every mount, serves
// exactly the routes of the contract (and the account, sign-in, payments,
// WebSub and ping routes), each registered from links.Routes.
func TestRoutesContract(t *testing.T) {
	want := []string{
		"GET /{$}", "GET /subscribe", "POST /subscriptions", "GET /signin", "POST /signin",
		"GET /confirm/{token}", "POST /confirm/{token}",
		"GET /account/{token}", "POST /account/{token}/subscriptions/{id}/delivery", "POST /account/{token}/subscriptions/{id}/settings",
		"POST /account/{token}/subscriptions/{id}/unsubscribe", "POST /account/{token}/subscriptions/{id}/confirm",
		"POST /account/{token}/subscriptions/confirm-all",
		"POST /account/{token}/subscriptions/{id}/channel", "POST /account/{token}/subscriptions/{id}/channel/test",
		"POST /account/{token}/subscriptions/{id}/deliveries",
		"POST /account/{token}/digests", "POST /account/{token}/digests/{id}/delete",
		"POST /account/{token}/digests/{id}/channel", "POST /account/{token}/digests/{id}/channel/test", "POST /account/{token}/opml", "GET /account/{token}/opml",
		"GET /account/{token}/export", "GET /account/{token}/ledger.csv", "GET /account/{token}/delete", "POST /account/{token}/delete",
		"POST /account/{token}/pause", "POST /account/{token}/resume",
		"POST /account/{token}/subscriptions/{id}/pay", "GET /account/{token}/publisher",
		"POST /account/{token}/publisher/claims", "POST /account/{token}/publisher/claims/{id}/check",
		"POST /account/{token}/publisher/feeds/{id}/move",
		"POST /account/{token}/api-tokens", "POST /account/{token}/api-tokens/{id}/revoke",
		"POST /account/{token}/sign-out", "POST /account/{token}/fresh-link",
		"GET /unsubscribe/{token}", "POST /unsubscribe/{token}", "GET /moves/{token}", "POST /moves/{token}",
		"GET /feeds/status", "GET /bot", "GET /static/{file}", "GET /healthz", "GET /metrics",
		"GET /credits", "POST /credits/checkout", "POST /webhooks/stripe",
		"GET /websub/{token}", "POST /websub/{token}",
		"GET /ping", "GET /preview", "POST /ping", "POST /RPC2", "POST /webhooks/{provider}", "/api/v1/",
	}
	var got []string
	for _, rt := range links.Routes() {
		got = append(got, rt.Pattern())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("routes\n%q\nwant\n%q", got, want)
	}

	h := newHarness(t, func(d *Deps) { d.Metrics = metrics.New() })
	h.srv.MountCredits(CreditsConfig{})
	h.srv.MountWebSub(WebSubOptions{Ingest: func(context.Context, int64, []byte, string) error { return nil }})
	h.srv.MountPings(PingOptions{PollNow: func(context.Context, int64, string) error { return nil }})
	h.srv.MountESP(ESPOptions{})
	for _, rt := range links.Routes() {
		r := httptest.NewRequest(rt.Method, links.Fill(rt.Path, "T", "1", "x"), nil)
		if rt.Path == links.PathHome {
			r = httptest.NewRequest(rt.Method, "/", nil)
		}
		if _, pattern := h.srv.mux.Handler(r); pattern != rt.Pattern() {
			t.Errorf("%s %s is served by %q, want %q", rt.Method, r.URL.Path, pattern, rt.Pattern())
		}
	}
}

// TestUnknownRoutesGetThePage: an address feedmail does not serve gets the
// site's own "Page not found" page (HTML, with the security headers), not
// the mux's plain text; a known path with the wrong method stays a 405.
func TestUnknownRoutesGetThePage(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		method, path string
		code         int
		page         bool
	}{
		{"GET", "/nope", 404, true},
		{"GET", "/account", 404, true},
		{"POST", "/nope/deeper", 404, true},
		{"DELETE", "/subscriptions", 405, false},
		{"POST", "/healthz", 405, false},
	} {
		w := h.do(req{method: c.method, path: c.path})
		isPage := strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") && strings.Contains(w.Body.String(), "Page not found")
		if w.Code != c.code || isPage != c.page {
			t.Errorf("%s %s: %d, %q (page %v); want %d, page %v", c.method, c.path, w.Code, w.Header().Get("Content-Type"), isPage, c.code, c.page)
		}
		if c.page && w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s %s: the not-found page lacks the security headers", c.method, c.path)
		}
	}
}

// TestMetricsOffThePublicListener: with FEEDMAIL_METRICS_LISTEN set,
// /metrics is not served by the public handler (serve answers it on its
// own listener); without it, it is.
func TestMetricsOffThePublicListener(t *testing.T) {
	for _, c := range []struct {
		listen string
		code   int
	}{{"", http.StatusOK}, {"127.0.0.1:9100", http.StatusNotFound}} {
		h := newHarness(t, func(d *Deps) { d.Metrics = metrics.New(); d.Config.MetricsListen = c.listen })
		if w := h.get("/metrics"); w.Code != c.code {
			t.Errorf("FEEDMAIL_METRICS_LISTEN=%q: GET /metrics %d, want %d", c.listen, w.Code, c.code)
		}
	}
}
