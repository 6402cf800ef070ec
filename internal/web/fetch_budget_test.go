package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/opml"
)

// TestFetchBudget: new feeds checked for an account and for a client are
// counted together across the OPML upload, the API and the signup form;
// past the budget the rest are refused (in the report, 429 on the API,
// next to the field on the form) and nothing is fetched for them; an
// hour later there is budget again.
func TestFetchBudget(t *testing.T) {
	lim := NoLimits()
	lim.FetchPerAccount = Limit{Every: 20 * time.Minute, Burst: 3}
	lim.FetchPerIP = Limit{Every: 12 * time.Minute, Burst: 5}
	h := newHarness(t, withLimits(lim))
	ann, bob := h.user("ann@example.com"), h.user("bob@example.com")
	var outs []opml.Outline
	for i := range 5 {
		outs = append(outs, opml.Outline{Title: fmt.Sprint("F", i), XMLURL: h.feed(fmt.Sprint("Feed ", i)).URL()})
	}
	var doc bytes.Buffer
	if err := opml.Write(&doc, "list", outs); err != nil {
		t.Fatal(err)
	}
	fetchedBefore := len(h.farm.Requests())
	body := h.upload(h.accountPath(ann), doc.Bytes(), "instant").Body.String()
	if !strings.Contains(body, "3 added · 0 already there · 2 failed") || strings.Count(body, "try again in") != 2 {
		t.Fatalf("upload past the account's budget of 3:\n%s", body)
	}
	if n := len(h.farm.Requests()) - fetchedBefore; n != 3 {
		t.Fatalf("the upload fetched %d feeds, want the 3 of the budget", n)
	}

	// Bob, from the same client address: 2 left of its 5.
	plain, _, err := api.IssueToken(context.Background(), h.st, bob.ID, "script")
	if err != nil {
		t.Fatal(err)
	}
	create := func(feedURL string) *httptest.ResponseRecorder {
		return h.do(req{method: "POST", path: "/api/v1/subscriptions", header: map[string]string{
			"Authorization": "Bearer " + plain, "Content-Type": "application/json"},
			remote: "192.0.2.1:99", body: `{"feed_url": "` + feedURL + `"}`})
	}
	for i := range 2 {
		if w := create(h.feed(fmt.Sprint("Bob ", i)).URL()); w.Code != http.StatusCreated {
			t.Fatalf("API subscription %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := create(h.feed("Bob 2").URL())
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "try again in") {
		t.Fatalf("API past the client's budget: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	// The signup form from that client too.
	sw := h.post("/subscriptions", url.Values{"email": {"carl@example.com"}, "url": {h.feed("Carl").URL()}, "delivery": {"instant"}})
	if got := fieldErrors(sw.Body.String())["url"]; sw.Code != http.StatusUnprocessableEntity || !strings.Contains(got, "try again in") {
		t.Fatalf("signup form past the client's budget: %d, url error %q", sw.Code, got)
	}
	// Another client is not limited by this one's budget.
	other := h.do(req{method: "POST", path: "/subscriptions", remote: "198.51.100.9:1",
		form: url.Values{"email": {"dan@example.com"}, "url": {h.feed("Dan").URL()}, "delivery": {"instant"}}})
	if other.Code != http.StatusOK {
		t.Fatalf("another client: %d", other.Code)
	}
	h.clk.Advance(time.Hour)
	if w := create(h.feed("Bob 3").URL()); w.Code != http.StatusCreated {
		t.Fatalf("an hour later: %d %s", w.Code, w.Body)
	}
}
