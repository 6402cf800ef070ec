package web

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// TestAccountSeveralDeliveries: on the account page a feed got by email
// takes another delivery (a webhook) as a subscription of its own; the
// page shows the feed once with both deliveries below it; adding the same
// one again adds nothing; moving the webhook back to email (already
// there) is refused next to its form; unsubscribing the webhook leaves
// the email.
func TestAccountSeveralDeliveries(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Two places feed")
	u := h.subscribeConfirmed("two@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	mail := h.subsOf(u)[0]
	add := acc + "/subscriptions/" + itoa(int(mail.ID)) + "/deliveries"
	rc := channeltest.Webhook(t)
	if body := h.get(acc).Body.String(); !strings.Contains(body, `action="`+add+`"`) {
		t.Fatalf("the account page lacks the add-a-delivery form")
	}
	w := h.post(add, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/in"}})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=added") {
		t.Fatalf("add a webhook: %d %s", w.Code, w.Header().Get("Location"))
	}
	subs := h.subsOf(u)
	if len(subs) != 2 || subs[0].ID != mail.ID || subs[0].Channel != model.ChannelEmail || subs[1].Channel != "webhook" ||
		subs[1].State != store.SubActive {
		t.Fatalf("after adding: %+v; want the email and an active webhook subscription", subs)
	}
	hook := subs[1]
	body := html.UnescapeString(h.get(acc).Body.String())
	if n := strings.Count(body, "<h3>Two places feed</h3>"); n != 1 {
		t.Errorf("the feed's heading is shown %d times, want once", n)
	}
	if !strings.Contains(body, "<h4>By email</h4>") || !strings.Contains(body, "<h4>By webhook to "+rc.URL()+"/in</h4>") {
		t.Errorf("the page does not list both deliveries under the feed")
	}
	if w := h.post(add, url.Values{"channel": {"webhook"}, "target": {rc.URL() + "/in"}}); !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=readded") {
		t.Errorf("the same delivery again: %d %s; want done=readded", w.Code, w.Header().Get("Location"))
	}
	if n := len(h.subsOf(u)); n != 2 {
		t.Errorf("%d subscriptions after adding the same delivery again, want 2", n)
	}
	w = h.post(acc+"/subscriptions/"+itoa(int(hook.ID))+"/channel", url.Values{"remove": {"1"}})
	if errs := fieldErrors(w.Body.String()); w.Code != http.StatusConflict || !strings.Contains(errs["ch-"+itoa(int(hook.ID))], "already get this feed there") {
		t.Errorf("webhook back to email beside the email: %d %v; want 409 next to the form", w.Code, errs)
	}
	w = h.post(acc+"/subscriptions/"+itoa(int(hook.ID))+"/unsubscribe", nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("unsubscribe the webhook: %d", w.Code)
	}
	if subs := h.subsOf(u); len(subs) != 1 || subs[0].ID != mail.ID || subs[0].State != store.SubActive {
		t.Errorf("after unsubscribing the webhook: %+v; want the email only", subs)
	}
}
