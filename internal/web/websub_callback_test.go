package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/websub"
)

// TestWebSubCallbackNamesTheSubscription: the callback URL carries the tag
// of the feed's current subscription, so it cannot be made from the feed
// id (not even with the signing key) nor used once that subscription
// ended. The callback form from before the tag still takes content (hubs
// hold it until their lease ends; content is checked against the
// subscription's secret anyway) but no verification.
func TestWebSubCallbackNamesTheSubscription(t *testing.T) {
	e := newWSEnv(t)
	const secret = "s3cr3t-s3cr3t"
	f := e.setWebSub(e.feed("https://cb.example/feed", true), store.WebSubStatePending, secret)
	tagged := e.links.WebSubCallback(f.ID, secret)
	untagged := e.ts.URL + "/websub/" + e.links.Tokens.Sign(token.WebSub, f.ID, time.Time{})
	ended := e.links.WebSubCallback(f.ID, "the-secret-of-an-ended-subscription")
	if tagged == ended || !strings.HasPrefix(tagged, untagged+websub.CallbackSep) {
		t.Fatalf("callbacks: %s for this subscription, %s for another: want the signed feed id and a tag per subscription", tagged, ended)
	}

	verify := func(cb string) int {
		code, _, _ := e.do("GET", cb+"?"+verifyQuery("subscribe", f.URL, "ch", "3600"), nil, nil)
		return code
	}
	for name, cb := range map[string]string{"untagged (old) callback": untagged, "an ended subscription's callback": ended,
		"tag cut short": tagged[:len(tagged)-2]} {
		if code := verify(cb); code != http.StatusNotFound {
			t.Errorf("verification at %s: %d, want 404", name, code)
		}
		if g := e.reload(f.ID); g.WebSubState != store.WebSubStatePending {
			t.Fatalf("verification at %s moved the state to %q", name, g.WebSubState)
		}
	}

	body := []byte(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title></feed>`)
	sig, err := websub.Sign([]byte(secret), "sha256", body)
	if err != nil {
		t.Fatal(err)
	}
	push := func(cb string) int {
		code, _, _ := e.do("POST", cb, bytes.NewReader(body), http.Header{"Content-Type": {"application/atom+xml"}, "X-Hub-Signature": {sig}})
		return code
	}
	if code := push(ended); code != http.StatusGone {
		t.Errorf("content at an ended subscription's callback: %d, want 410", code)
	}
	before := len(e.pushes())
	if code := push(untagged); code != http.StatusAccepted || len(e.pushes()) != before+1 {
		t.Errorf("content at the untagged (old) callback: %d, %d ingested; want 202 and ingested", code, len(e.pushes())-before)
	}
	if code := verify(tagged); code != http.StatusOK {
		t.Fatalf("verification at the subscription's callback: %d, want 200", code)
	}
	if g := e.reload(f.ID); g.WebSubState != store.WebSubStateActive {
		t.Errorf("state after verification: %q, want active", g.WebSubState)
	}
}
