package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// TestPublisherClaimsAndPays: a publisher claims a feed on their page, is
// refused while the token is not in the feed, and becomes its owner once
// the token is in the feed's metadata; the signup page and the readers'
// account pages then say the publisher pays; when the publisher's credits
// run out a reader can choose to pay; a second publisher cannot take the
// feed over.
func TestPublisherClaimsAndPays(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Blog")
	pub := h.subscribeConfirmed("pub@example.com", f.URL(), "instant")
	reader := h.subscribeConfirmed("reader@example.com", f.URL(), "instant")
	page := h.accountPath(pub) + "/publisher"

	if body := h.get(page).Body.String(); !strings.Contains(body, "You do not pay for any feed yet") {
		t.Fatalf("publisher page:\n%s", body)
	}
	if w := h.post(page+"/claims", url.Values{"url": {"https://unknown.example/feed"}}); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "does not know this feed yet") {
		t.Fatalf("claim of an unknown feed: %d", w.Code)
	}
	if w := h.post(page+"/claims", url.Values{"url": {f.URL()}}); w.Code != http.StatusSeeOther {
		t.Fatalf("claim: %d %s", w.Code, w.Body.String())
	}
	claims, err := h.st.ClaimsOf(ctx, pub.ID)
	if err != nil || len(claims) != 1 || !strings.HasPrefix(claims[0].Token, "feedmail-verify-") {
		t.Fatalf("claims %+v %v", claims, err)
	}
	c := claims[0]
	if body := h.get(page).Body.String(); !strings.Contains(body, c.Token) || !strings.Contains(body, "Check now") {
		t.Fatalf("publisher page does not show the token:\n%s", body)
	}
	check := page + "/claims/" + itoa(int(c.ID)) + "/check"
	if w := h.post(check, nil); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "The token was not found") {
		t.Fatalf("check without the token: %d\n%s", w.Code, w.Body.String())
	}
	if _, err := h.st.FeedOwnerOf(ctx, c.FeedID); err == nil {
		t.Fatal("owner set without the token")
	}

	spec := f.Spec()
	spec.Title = "Blog " + c.Token
	f.SetSpec(spec)
	// Pressed again at once: refused without a request to the site.
	before := len(f.Requests())
	if w := h.post(check, nil); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "less than a minute ago") {
		t.Fatalf("check again at once: %d\n%s", w.Code, w.Body.String())
	}
	if n := len(f.Requests()) - before; n != 0 {
		t.Fatalf("a check pressed again at once made %d requests to the feed", n)
	}
	h.clk.Advance(time.Minute)
	if w := h.post(check, nil); w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "done=verified") {
		t.Fatalf("check with the token: %d\n%s", w.Code, w.Body.String())
	}
	o, err := h.st.FeedOwnerOf(ctx, c.FeedID)
	if err != nil || o.UserID != pub.ID || o.VerifiedBy != store.OwnerByFeed {
		t.Fatalf("owner %+v %v", o, err)
	}
	if body := h.get(page).Body.String(); !strings.Contains(body, "2 reader(s) by instant email") || !strings.Contains(body, "Credits used: 0") ||
		!strings.Contains(body, "Forecast: not enough history to tell") {
		t.Fatalf("publisher page after verifying:\n%s", body)
	}
	if body := h.get("/subscribe?url=" + url.QueryEscape(f.URL())).Body.String(); !strings.Contains(body, "paid for by its publisher") ||
		strings.Contains(body, `id="forecast"`) {
		t.Fatalf("signup page does not say the publisher pays:\n%s", body)
	}
	acc := h.accountPath(reader)
	if body := h.get(acc).Body.String(); !strings.Contains(body, "Paid for by its publisher") || strings.Contains(body, "pay for it myself") {
		t.Fatalf("reader's account page:\n%s", body)
	}

	// The publisher's credits run out: the reader may pay.
	sub := h.subsOf(reader)[0]
	if w := h.post(acc+"/subscriptions/"+itoa(int(sub.ID))+"/pay", nil); w.Code != http.StatusConflict {
		t.Fatalf("pay while the publisher pays: %d", w.Code)
	}
	if err := h.st.DB.Model(&store.FeedOwner{}).Where("feed_id = ?", c.FeedID).Updates(map[string]any{"lapsed_at": h.clk.Now(),
		"lapse_seq": 1}).Error; err != nil {
		t.Fatal(err)
	}
	if body := h.get(acc).Body.String(); !strings.Contains(body, "stopped paying. It stays free until 16 March 2026") ||
		!strings.Contains(body, "pay for it myself") {
		t.Fatalf("reader's account page in the notice period:\n%s", body)
	}
	if w := h.post(acc+"/subscriptions/"+itoa(int(sub.ID))+"/pay", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("pay: %d", w.Code)
	}
	if body := h.get(acc).Body.String(); !strings.Contains(body, "you pay for it") {
		t.Fatalf("reader's account page after choosing to pay:\n%s", body)
	}

	// Another publisher cannot take the feed over by a claim.
	if w := h.post(acc+"/publisher/claims", url.Values{"url": {f.URL()}}); w.Code != http.StatusSeeOther {
		t.Fatalf("second claim: %d", w.Code)
	}
	rc, err := h.st.ClaimsOf(ctx, reader.ID)
	if err != nil || len(rc) != 1 {
		t.Fatalf("claims %+v %v", rc, err)
	}
	spec.Title = "Blog " + c.Token + " " + rc[0].Token
	f.SetSpec(spec)
	if w := h.post(acc+"/publisher/claims/"+itoa(int(rc[0].ID))+"/check", nil); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "Another publisher already pays") {
		t.Fatalf("takeover: %d\n%s", w.Code, w.Body.String())
	}
	if o, _ := h.st.FeedOwnerOf(ctx, c.FeedID); o == nil || o.UserID != pub.ID {
		t.Fatalf("owner after a takeover attempt: %+v", o)
	}
}
