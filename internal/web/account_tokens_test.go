package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAccountAPITokens: the account page makes a token and shows it once,
// lists it with its last use, and revokes it; the token works on the API
// until then, and another person's account cannot revoke it.
func TestAccountAPITokens(t *testing.T) {
	h := newHarness(t)
	ann, bob := h.user("ann@example.com"), h.user("bob@example.com")
	acc := h.accountPath(ann)

	w := h.post(acc+"/api-tokens", url.Values{"name": {"my script"}})
	plain := regexp.MustCompile(`fm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}`).FindString(w.Body.String())
	if w.Code != http.StatusOK || plain == "" || !strings.Contains(w.Body.String(), "my script") {
		t.Fatalf("make a token: %d, token %q\n%s", w.Code, plain, w.Body.String())
	}
	api := func() int {
		return h.do(req{method: "GET", path: "/api/v1/balance", header: map[string]string{"Authorization": "Bearer " + plain}}).Code
	}
	if code := api(); code != http.StatusOK {
		t.Fatalf("the new token on the API: %d", code)
	}
	// Cross-origin protection is for cookie forms; a bearer request from
	// another origin goes through (and a cross-site form to the page's own
	// token route does not).
	cross := map[string]string{"Authorization": "Bearer " + plain, "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}
	if w := h.do(req{method: "POST", path: "/api/v1/digests", header: cross}); w.Code != http.StatusBadRequest ||
		w.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("cross-origin API request: %d %q, want the API's own 400 problem", w.Code, w.Header().Get("Content-Type"))
	}
	if w := h.do(req{method: "POST", path: acc + "/api-tokens", form: url.Values{}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}); w.Code != http.StatusForbidden {
		t.Errorf("cross-site form making a token: %d, want 403", w.Code)
	}
	page := h.get(acc).Body.String()
	if strings.Contains(page, plain) || !strings.Contains(page, "my script") || strings.Contains(page, ">never<") {
		t.Errorf("the page again: shows the token %v, lists it %v, shows a last use %v",
			strings.Contains(page, plain), strings.Contains(page, "my script"), !strings.Contains(page, ">never<"))
	}
	tokens, err := h.st.APITokensOfUser(t.Context(), ann.ID)
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens %v, %v", tokens, err)
	}
	revoke := acc + "/api-tokens/" + itoa(int(tokens[0].ID)) + "/revoke"
	if w := h.post(h.accountPath(bob)+"/api-tokens/"+itoa(int(tokens[0].ID))+"/revoke", nil); w.Code != http.StatusNotFound || api() != http.StatusOK {
		t.Errorf("another account revoking: %d, token then %d; want 404 and the token still working", w.Code, api())
	}
	h.clk.Advance(time.Minute)
	if w := h.post(revoke, nil); w.Code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", w.Code)
	}
	if code := api(); code != http.StatusUnauthorized {
		t.Errorf("a revoked token on the API: %d, want 401", code)
	}
	if page := h.get(acc).Body.String(); strings.Contains(page, "my script") {
		t.Errorf("the page still lists the revoked token")
	}
	if w := h.post(acc+"/api-tokens", url.Values{"name": {strings.Repeat("n", 61)}}); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("a long name: %d, want 422", w.Code)
	}
}
