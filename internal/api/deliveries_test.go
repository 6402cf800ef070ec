package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestSeveralDeliveriesOfAFeed: a feed the account gets by email, then by
// webhook through POST, is two subscriptions (201, the email untouched);
// the same webhook again answers 200 with its settings changed and its
// secret kept and not shown; another target is a third subscription; the
// list shows all three; a PATCH moving one delivery onto another's target
// is a 409; deleting the webhook leaves the email.
func TestSeveralDeliveriesOfAFeed(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	_, tok := h.user("many@example.org")
	f := h.farm.AddFeed(farm.Spec{Title: "Posts", ItemCount: 2})
	post := func(body map[string]any) (int, map[string]any) {
		t.Helper()
		body["feed_url"] = f.URL()
		w := h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: body})
		return w.Code, decode(t, w)
	}
	code, mail := post(map[string]any{"format": "summary"})
	if code != http.StatusCreated || mail["channel"] != "email" {
		t.Fatalf("email: %d %v; want 201", code, mail)
	}
	code, hook := post(map[string]any{"channel": "webhook", "target": "https://hooks.example.net/a"})
	secret, _ := hook["signing_secret"].(string)
	if code != http.StatusCreated || hook["id"] == mail["id"] || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("webhook beside email: %d %v; want 201, a new id and its secret", code, hook)
	}
	code, again := post(map[string]any{"channel": "webhook", "target": "https://hooks.example.net/a", "format": "title"})
	if code != http.StatusOK || again["id"] != hook["id"] || again["format"] != "title" || again["signing_secret"] != nil {
		t.Errorf("the same webhook again: %d %v; want 200, id %v, format title, no secret shown", code, again, hook["id"])
	}
	code, other := post(map[string]any{"channel": "webhook", "target": "https://hooks.example.net/b"})
	if code != http.StatusCreated || other["id"] == hook["id"] {
		t.Errorf("another target: %d %v; want 201 and a new id", code, other)
	}
	w := h.do(call{method: "GET", path: "/api/v1/subscriptions", token: tok})
	list := decode(t, w)
	items, _ := list["items"].([]any)
	byID := map[any]map[string]any{}
	for _, it := range items {
		m := it.(map[string]any)
		byID[m["id"]] = m
	}
	if len(items) != 3 || byID[mail["id"]]["format"] != "summary" || byID[hook["id"]]["target"] != "https://hooks.example.net/a" ||
		byID[other["id"]]["target"] != "https://hooks.example.net/b" {
		t.Fatalf("list: %v; want the email (summary) and both webhooks", list)
	}
	path := "/api/v1/subscriptions/" + id(int64(other["id"].(float64)))
	w = h.do(call{method: "PATCH", path: path, token: tok, body: map[string]any{"channel": "webhook", "target": "https://hooks.example.net/a"}})
	if p := decode(t, w); w.Code != http.StatusConflict || p["field"] != "target" {
		t.Errorf("moving a delivery onto another's target: %d %v; want a 409 on target", w.Code, p)
	}
	w = h.do(call{method: "DELETE", path: "/api/v1/subscriptions/" + id(int64(hook["id"].(float64))), token: tok})
	if w.Code != http.StatusNoContent {
		t.Fatalf("delete the webhook: %d %s", w.Code, w.Body)
	}
	w = h.do(call{method: "GET", path: "/api/v1/subscriptions/" + id(int64(mail["id"].(float64))), token: tok})
	if m := decode(t, w); w.Code != http.StatusOK || m["state"] != "active" {
		t.Errorf("the email after the webhook was deleted: %d %v; want it active", w.Code, m)
	}
}
