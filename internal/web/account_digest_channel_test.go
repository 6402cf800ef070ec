package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// TestAccountDigestChannel: a digest's channel form on the account page
// (the subscription's, shared) sets a webhook and shows its signing
// secret, sends a sample issue of two posts to it, refuses a wrong target
// with the problem next to the digest's form (nothing stored), takes it
// back to email, and finds no other person's digest.
func TestAccountDigestChannel(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Digest channel feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	if w := h.post(acc+"/digests", url.Values{"name": {"Mornings"}, "preset": {"daily"}, "zone": {"UTC"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("create digest: %d", w.Code)
	}
	dg, err := h.st.DigestByName(ctx, u.ID, "Mornings")
	if err != nil {
		t.Fatal(err)
	}
	stored := func() *store.Digest {
		t.Helper()
		d, err := h.st.DigestByID(ctx, dg.ID)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	path := acc + "/digests/" + itoa(int(dg.ID)) + "/channel"
	rc := channeltest.Webhook(t)

	if body := h.get(acc).Body.String(); !strings.Contains(body, `action="`+path+`"`) || !strings.Contains(body, `id="dch-`+itoa(int(dg.ID))+`-form"`) {
		t.Fatalf("account page lacks the digest's channel form")
	}
	w := h.post(path, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/in"}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != acc+"?done=channel#digests" {
		t.Fatalf("save: %d %s", w.Code, w.Header().Get("Location"))
	}
	got := stored()
	if got.Channel != webhook.Name || got.Target != rc.URL()+"/in" || !strings.HasPrefix(got.ChannelSecret, webhook.SecretPrefix) {
		t.Fatalf("stored %q %q %q", got.Channel, got.Target, got.ChannelSecret)
	}
	if body := html.UnescapeString(h.get(acc + "?done=channel").Body.String()); !strings.Contains(body, "Delivered by webhook to "+rc.URL()+"/in") ||
		!strings.Contains(body, got.ChannelSecret) {
		t.Errorf("page after saving lacks the digest's channel or its signing secret")
	}

	// The digest's own form refused keeps its channel form beside it.
	w = h.post(acc+"/digests", url.Values{"id": {itoa(int(dg.ID))}, "name": {""}, "preset": {"daily"}, "zone": {"UTC"}})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(w.Body.String()), "Delivered by webhook to "+rc.URL()+"/in") {
		t.Errorf("digest form refused: %d, the channel form lost", w.Code)
	}

	w = h.post(path+"/test", url.Values{})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "A sample issue was delivered.") {
		t.Fatalf("test delivery: %d", w.Code)
	}
	reqs := rc.Accepted()
	if len(reqs) != 1 || reqs[0].Header.Get("webhook-signature") == "" {
		t.Fatalf("receiver got %d requests, want 1 signed", len(reqs))
	}
	for _, want := range []string{`"digest.issue"`, `"Mornings"`, "A sample post from feedmail", "Another sample post"} {
		if !strings.Contains(string(reqs[0].Body), want) {
			t.Errorf("sample issue lacks %s: %s", want, reqs[0].Body)
		}
	}

	for _, c := range []struct {
		form url.Values
		says string
	}{
		{url.Values{"channel": {"discord"}}, "A target URL is needed"},
		{url.Values{"channel": {"email"}, "target": {"https://x.example.org/"}}, "Email goes to the account's address"},
		{url.Values{"channel": {"pigeon"}, "target": {"https://x.example.org/"}}, `Unknown channel "pigeon"`},
	} {
		w := h.post(path, c.form)
		errs := fieldErrors(w.Body.String())
		if w.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(html.UnescapeString(errs["dch-"+itoa(int(dg.ID))]), c.says) {
			t.Errorf("%v: %d %v, want 422 saying %q", c.form, w.Code, errs, c.says)
		}
	}
	if kept := stored(); kept.Channel != webhook.Name || kept.ChannelSecret != got.ChannelSecret {
		t.Errorf("a refused change was stored: %q", kept.Channel)
	}

	if w := h.post(path, url.Values{"remove": {"1"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("remove: %d", w.Code)
	}
	if back := stored(); back.Channel != model.ChannelEmail || back.Target != "" || back.ChannelSecret != "" {
		t.Errorf("after remove: %q %q %q", back.Channel, back.Target, back.ChannelSecret)
	}
	if w := h.post(path+"/test", url.Values{}); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("test of an email digest: %d, want 422", w.Code)
	}

	other := h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	for _, p := range []string{"/channel", "/channel/test"} {
		w := h.post(h.accountPath(other)+"/digests/"+itoa(int(dg.ID))+p, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/bob"}})
		if w.Code != http.StatusNotFound {
			t.Errorf("another person's digest %s: %d, want 404", p, w.Code)
		}
	}
	if d := stored(); d.Channel != model.ChannelEmail {
		t.Errorf("another person changed the digest: %q", d.Channel)
	}
}
