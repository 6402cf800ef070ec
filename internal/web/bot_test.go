package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestBotPage: the page a publisher reaches from the poller's User-Agent
// answers 200 and says how feeds are read, the robots.txt agent name and
// how to make it stop.
func TestBotPage(t *testing.T) {
	h := newHarness(t)
	w := h.get("/bot")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /bot: %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{"feedmail/1 (+", "/bot; N subscribers)", "<code>feedmail</code>", "410 Gone", "Retry-After", "/feeds/status"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
