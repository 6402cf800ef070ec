package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/proof"
)

var challengeRE = regexp.MustCompile(`name="proof_challenge" value="([^"]+)"`)

// challengeOf is the proof-of-work challenge in a signup page.
func challengeOf(t *testing.T, body string) string {
	t.Helper()
	m := challengeRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the signup page carries no challenge:\n%s", body)
	}
	return m[1]
}

// TestSignupProofOfWork: the signup form carries a signed challenge; a
// form sent without it, too soon without an answer, twice, or after it
// expired is shown again with a fresh one and sends nothing; a solved
// challenge, or one sent after the wait (no script), goes through.
func TestSignupProofOfWork(t *testing.T) {
	lim := NoLimits()
	lim.Proof = proof.Options{Bits: 8, MinWait: 5 * time.Second, MaxAge: time.Hour}
	h := newHarness(t, withLimits(lim))
	f := h.feed("Feed")
	page := h.get("/").Body.String()
	if !strings.Contains(page, `data-proof-bits="8"`) || !strings.Contains(page, "/static/proof.js?v=") {
		t.Fatalf("the signup page lacks the proof's bits or script:\n%s", page)
	}
	n := 0
	send := func(name string, form url.Values, wantCode int, wantSays string) string {
		t.Helper()
		form.Set("url", f.URL())
		form.Set("delivery", "instant")
		n++
		form.Set("email", "p"+strings.Repeat("x", n)+"@example.org")
		w := h.post("/subscriptions", form)
		body := w.Body.String()
		if w.Code != wantCode || !strings.Contains(body, wantSays) {
			t.Fatalf("%s: %d, want %d saying %q\n%s", name, w.Code, wantCode, wantSays, body)
		}
		return body
	}
	fresh := func() string { return challengeOf(t, h.get("/").Body.String()) }

	body := send("no challenge", url.Values{}, http.StatusUnprocessableEntity, "could not be checked")
	challengeOf(t, body) // shown again with a fresh challenge
	send("forged challenge", url.Values{"proof_challenge": {"1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA"}, "proof": {"1"}},
		http.StatusUnprocessableEntity, "could not be checked")
	ch := fresh()
	send("too soon, no answer", url.Values{"proof_challenge": {ch}}, http.StatusUnprocessableEntity, "wait a few seconds")
	if got := len(h.notices()); got != 0 {
		t.Fatalf("%d emails queued by refused forms", got)
	}

	ch = fresh()
	solved := url.Values{"proof_challenge": {ch}, "proof": {proof.Solve(ch, 8)}}
	send("solved", solved, http.StatusOK, "Check your inbox")
	send("the same form again", solved, http.StatusUnprocessableEntity, "sent already")

	ch = fresh()
	h.clk.Advance(5 * time.Second)
	send("no script, after the wait", url.Values{"proof_challenge": {ch}}, http.StatusOK, "Check your inbox")

	ch = fresh()
	h.clk.Advance(time.Hour)
	send("expired", url.Values{"proof_challenge": {ch}, "proof": {proof.Solve(ch, 8)}}, http.StatusUnprocessableEntity,
		"open a long time")
	if got := len(h.notices()); got != 2 {
		t.Fatalf("%d confirmation emails, want the 2 of the forms that passed", got)
	}
}

// TestSignupRefusesIPDomain: an address at an IP address is refused next
// to the email field, and nothing is queued; the API refuses it too.
func TestSignupRefusesIPDomain(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	for _, addr := range []string{"f@[127.0.0.1]", "f@127.0.0.1"} {
		w := h.post("/subscriptions", url.Values{"email": {addr}, "url": {f.URL()}, "delivery": {"instant"}})
		if got := fieldErrors(w.Body.String())["email"]; w.Code != http.StatusUnprocessableEntity || !strings.Contains(got, "IP address") {
			t.Errorf("%s: %d, email error %q", addr, w.Code, got)
		}
	}
	if n := len(h.notices()); n != 0 {
		t.Fatalf("%d emails queued to IP addresses", n)
	}
	// An account that has such an address from before cannot subscribe
	// through the API either.
	u, _, err := h.st.EnsureUser(context.Background(), "old@[192.0.2.1]")
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := api.IssueToken(context.Background(), h.st, u.ID, "script")
	if err != nil {
		t.Fatal(err)
	}
	w := h.do(req{method: "POST", path: "/api/v1/subscriptions", body: `{"feed_url": "` + f.URL() + `"}`,
		header: map[string]string{"Authorization": "Bearer " + plain, "Content-Type": "application/json"}})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "IP address") {
		t.Fatalf("API subscription for an account at an IP address: %d %s", w.Code, w.Body)
	}
}
