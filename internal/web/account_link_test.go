package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAccountLinkInEmailsExpires: the account link put in every email opens
// the page for two weeks, not sixty days, and an expired one offers a
// fresh link.
func TestAccountLinkInEmailsExpires(t *testing.T) {
	h := newHarness(t)
	u := h.user("ann@example.com")
	link := strings.TrimPrefix(h.links.Account(u.ID, h.clk.Now()), "http://feedmail.test")
	h.clk.Advance(13 * 24 * time.Hour)
	if w := h.get(link); w.Code != http.StatusOK {
		t.Fatalf("13 days on: %d, want 200", w.Code)
	}
	h.clk.Advance(2 * 24 * time.Hour)
	if w := h.get(link); w.Code != http.StatusGone || !strings.Contains(w.Body.String(), "Email me a sign-in link") {
		t.Fatalf("15 days on: %d, want 410 with the sign-in form\n%s", w.Code, w.Body.String())
	}
}

// TestSignOutEverywhere: the button ends every account link issued before
// it, the one used included, and revokes the API tokens; a link issued
// afterwards works. A cross-site post is refused.
func TestSignOutEverywhere(t *testing.T) {
	h := newHarness(t)
	ann, bob := h.user("ann@example.com"), h.user("bob@example.com")
	acc, older, bobs := h.accountPath(ann), h.accountPath(ann), h.accountPath(bob)
	w := h.post(acc+"/api-tokens", url.Values{"name": {"script"}})
	plain := regexp.MustCompile(`fm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}`).FindString(w.Body.String())
	if plain == "" {
		t.Fatalf("make a token: %d\n%s", w.Code, w.Body.String())
	}
	api := func() int {
		return h.do(req{method: "GET", path: "/api/v1/balance", header: map[string]string{"Authorization": "Bearer " + plain}}).Code
	}
	if w := h.do(req{method: "POST", path: acc + "/sign-out", form: url.Values{}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}); w.Code != http.StatusForbidden {
		t.Fatalf("cross-site sign-out: %d, want 403", w.Code)
	}
	if !strings.Contains(h.get(acc).Body.String(), "Sign out everywhere") {
		t.Fatal("the account page has no sign-out-everywhere button")
	}
	h.clk.Advance(time.Minute)
	if w := h.post(acc+"/sign-out", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "API tokens were revoked") {
		t.Fatalf("sign out: %d\n%s", w.Code, w.Body.String())
	}
	for name, path := range map[string]string{"the link used": acc, "an older link": older} {
		if w := h.get(path); w.Code != http.StatusGone {
			t.Errorf("%s after signing out: %d, want 410", name, w.Code)
		}
	}
	if code := api(); code != http.StatusUnauthorized {
		t.Errorf("the API token after signing out: %d, want 401", code)
	}
	if w := h.get(bobs); w.Code != http.StatusOK {
		t.Errorf("another person's link: %d, want 200", w.Code)
	}
	h.clk.Advance(time.Second)
	if w := h.get(h.accountPath(ann)); w.Code != http.StatusOK {
		t.Errorf("a link issued after signing out: %d, want 200", w.Code)
	}
}

// TestAPITokenNeedsAFreshLink: a link older than 15 minutes cannot make an
// API token (403, and the page offers a fresh link instead of the form);
// the fresh link it emails can.
func TestAPITokenNeedsAFreshLink(t *testing.T) {
	h := newHarness(t)
	u := h.user("ann@example.com")
	acc := h.accountPath(u)
	h.clk.Advance(16 * time.Minute)
	if w := h.post(acc+"/api-tokens", url.Values{"name": {"late"}}); w.Code != http.StatusForbidden {
		t.Fatalf("make a token with a 16-minute-old link: %d, want 403", w.Code)
	}
	if ts, err := h.st.APITokensOfUser(t.Context(), u.ID); err != nil || len(ts) != 0 {
		t.Fatalf("tokens made: %v, %v", ts, err)
	}
	page := h.get(acc).Body.String()
	if !strings.Contains(page, "Email me a fresh link") || strings.Contains(page, "Make a token") {
		t.Fatalf("a stale link's page should offer a fresh link instead of the form")
	}
	if w := h.post(acc+"/fresh-link", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("email me a fresh link: %d", w.Code)
	}
	fresh := h.lastLink()
	h.clk.Advance(10 * time.Minute)
	if !strings.Contains(h.get(fresh).Body.String(), "Make a token") {
		t.Fatal("the fresh link's page has no token form")
	}
	if w := h.post(fresh+"/api-tokens", url.Values{"name": {"now"}}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "fm_") {
		t.Fatalf("make a token with the fresh link: %d", w.Code)
	}
}
