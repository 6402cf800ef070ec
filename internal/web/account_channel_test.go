package web

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// TestAccountChannel: the account page adds a channel to a subscription,
// shows a webhook's signing secret to its owner, sends a sample post to
// it, changes it, refuses a wrong target with the problem next to the
// form (nothing stored), takes it back to email, and finds no other
// person's subscription.
func TestInstantWords(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"", "Each post in its own email"},
		{"email", "Each post in its own email"},
		{"webhook", "Each post in its own webhook call"},
		{"slack", "Each post in its own Slack message"},
		{"ntfy", "Each post in its own ntfy message"},
		{"matrix", "Each post in its own Matrix message"},
		{"carrier", "Each post in its own carrier message"},
	} {
		if got := (channelForm{Name: c.name}).InstantWords(); got != c.want {
			t.Errorf("%q: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAccountChannel(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Channel feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	sub := h.subsOf(u)[0]
	path := acc + "/subscriptions/" + itoa(int(sub.ID)) + "/channel"
	rc := channeltest.Webhook(t)

	if body := h.get(acc).Body.String(); !strings.Contains(body, `action="`+path+`"`) || !strings.Contains(body, "Delivered by email") {
		t.Fatalf("account page lacks the channel form")
	}
	w := h.post(path, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/in"}})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=channel") {
		t.Fatalf("save: %d %s", w.Code, w.Header().Get("Location"))
	}
	got := h.subsOf(u)[0]
	if got.Channel != webhook.Name || got.Target != rc.URL()+"/in" || !strings.HasPrefix(got.ChannelSecret, webhook.SecretPrefix) {
		t.Fatalf("stored %q %q %q", got.Channel, got.Target, got.ChannelSecret)
	}
	body := html.UnescapeString(h.get(acc + "?done=channel").Body.String())
	if !strings.Contains(body, "Channel saved.") || !strings.Contains(body, got.ChannelSecret) {
		t.Errorf("page after saving lacks the flash or the signing secret")
	}
	_, sel, _ := strings.Cut(body, `<select id="delivery-`+itoa(int(sub.ID))+`"`)
	sel, _, _ = strings.Cut(sel, "</select>")
	if strings.Contains(sel, "in its own email") || !strings.Contains(sel, ">Each post in its own webhook call</option>") {
		t.Errorf("the delivery choice of a webhook subscription does not say webhook:\n%s", sel)
	}

	w = h.post(path+"/test", url.Values{})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "A sample post was delivered.") {
		t.Fatalf("test delivery: %d", w.Code)
	}
	reqs := rc.Accepted()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "A sample post from feedmail") || reqs[0].Header.Get("webhook-signature") == "" {
		t.Fatalf("receiver got %+v", reqs)
	}
	// Saving the same channel and target keeps the signing secret.
	h.post(path, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/in"}})
	if again := h.subsOf(u)[0]; again.ChannelSecret != got.ChannelSecret {
		t.Errorf("re-saving changed the secret")
	}

	for _, c := range []struct {
		form url.Values
		says string
	}{
		{url.Values{"channel": {"slack"}}, "A target URL is needed"},
		{url.Values{"channel": {"matrix"}, "target": {"https://m.example.org#!r:example.org"}}, "A matrix target needs"},
		{url.Values{"channel": {"pigeon"}, "target": {"https://x.example.org/"}}, `Unknown channel "pigeon"`},
	} {
		w := h.post(path, c.form)
		errs := fieldErrors(w.Body.String())
		if w.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(html.UnescapeString(errs["ch-"+itoa(int(sub.ID))]), c.says) {
			t.Errorf("%v: %d %v, want %q", c.form, w.Code, errs, c.says)
		}
	}
	if kept := h.subsOf(u)[0]; kept.Channel != webhook.Name {
		t.Errorf("a refused change was stored: %q", kept.Channel)
	}

	rc.Then(channeltest.Answer{Status: http.StatusGone})
	if w := h.post(path+"/test", url.Values{}); w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "http 410") {
		t.Errorf("test to a gone target: %d", w.Code)
	}

	if w := h.post(path, url.Values{"remove": {"1"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("remove: %d", w.Code)
	}
	if back := h.subsOf(u)[0]; back.Channel != model.ChannelEmail || back.Target != "" || back.ChannelSecret != "" {
		t.Errorf("after remove: %q %q %q", back.Channel, back.Target, back.ChannelSecret)
	}

	other := h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	if w := h.post(h.accountPath(other)+"/subscriptions/"+itoa(int(sub.ID))+"/channel", url.Values{"channel": {"email"}}); w.Code != http.StatusNotFound {
		t.Errorf("another person's subscription: %d, want 404", w.Code)
	}
}
