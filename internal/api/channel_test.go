package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestSubscriptionChannels: a subscription made or changed through the API
// takes a channel with the CLI's checks; the webhook's signing secret is in
// the answer that chose it and in no other, a token never; a bad channel
// or target is a 400 naming the field and changes nothing.
func TestSubscriptionChannels(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	u, tok := h.user("a@example.org")
	f := h.farm.AddFeed(farm.Spec{Title: "Posts", ItemCount: 2})
	post := func(body map[string]any) (int, map[string]any) {
		w := h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: body})
		return w.Code, decode(t, w)
	}
	code, m := post(map[string]any{"feed_url": f.URL(), "channel": "webhook", "target": "https://hooks.example.net/in"})
	secret, _ := m["signing_secret"].(string)
	if code != http.StatusCreated || m["channel"] != "webhook" || m["target"] != "https://hooks.example.net/in" || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("webhook subscription: %d %v; want 201 with the channel, target and a whsec_ secret", code, m)
	}
	id := id(int64(m["id"].(float64)))
	w := h.do(call{method: "GET", path: "/api/v1/subscriptions/" + id, token: tok})
	if g := decode(t, w); g["channel"] != "webhook" || g["signing_secret"] != nil {
		t.Errorf("read back: %v; want the channel and no secret", g)
	}
	repeatWebhook(t, h, tok, "/api/v1/subscriptions/"+id, "https://hooks.example.net/in", secret, func() string {
		subs, err := h.st.SubscriptionsOfUser(context.Background(), u.ID)
		if err != nil || len(subs) != 1 {
			t.Fatalf("subscriptions: %+v %v", subs, err)
		}
		return subs[0].ChannelSecret
	})
	for _, c := range []struct {
		name, field string
		body        map[string]any
		docInvalid  bool // openapi.json's enum refuses it too
	}{
		{"unknown channel", "channel", map[string]any{"channel": "pigeon", "target": "https://x.example.net/"}, true},
		{"email with a target", "target", map[string]any{"channel": "email", "target": "https://x.example.net/"}, false},
		{"matrix without a token", "target", map[string]any{"channel": "matrix", "target": "https://hs.example.net#!r:hs.example.net"}, false},
	} {
		w := h.do(call{method: "PATCH", path: "/api/v1/subscriptions/" + id, token: tok, body: c.body, docInvalid: c.docInvalid})
		if p := decode(t, w); w.Code != http.StatusBadRequest || p["field"] != c.field {
			t.Errorf("%s: %d %v; want a 400 problem on %s", c.name, w.Code, p, c.field)
		}
	}
	w = h.do(call{method: "PATCH", path: "/api/v1/subscriptions/" + id, token: tok,
		body: map[string]any{"channel": "ntfy", "target": "https://ntfy.example.net/news", "token": "tk_secret"}})
	if p := decode(t, w); w.Code != http.StatusOK || p["channel"] != "ntfy" || strings.Contains(w.Body.String(), "tk_secret") {
		t.Errorf("change to ntfy: %d %v; want 200, ntfy, the token not shown", w.Code, p)
	}
	subs, err := h.st.SubscriptionsOfUser(context.Background(), u.ID)
	if err != nil || len(subs) != 1 || subs[0].Channel != "ntfy" || subs[0].ChannelSecret != "tk_secret" {
		t.Errorf("stored: %+v, %v; want one ntfy subscription keeping its token", subs, err)
	}
	w = h.do(call{method: "PATCH", path: "/api/v1/subscriptions/" + id, token: tok, body: map[string]any{"channel": "email"}})
	if p := decode(t, w); w.Code != http.StatusOK || p["channel"] != "email" || p["target"] != nil {
		t.Errorf("back to email: %d %v", w.Code, p)
	}
}

// TestDigestChannels: a digest takes a channel through the API with the
// same checks; a bad one is a 400 that creates or changes nothing; a
// change of channel alone keeps the next slot; the signing secret is in
// the answer that chose the webhook and in no other.
func TestDigestChannels(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	ctx := context.Background()
	u, tok := h.user("a@example.org")
	w := h.do(call{method: "POST", path: "/api/v1/digests", token: tok,
		body: map[string]any{"name": "Daily", "schedule": "daily", "channel": "slack"}})
	if p := decode(t, w); w.Code != http.StatusBadRequest || p["field"] != "target" {
		t.Errorf("slack without a target: %d %v; want a 400 on target", w.Code, p)
	}
	if ds, err := h.st.DigestsOfUser(ctx, u.ID); err != nil || len(ds) != 0 {
		t.Fatalf("a refused digest was made: %+v %v", ds, err)
	}
	w = h.do(call{method: "POST", path: "/api/v1/digests", token: tok, body: map[string]any{"name": "Daily", "schedule": "daily"}})
	m := decode(t, w)
	if w.Code != http.StatusCreated || m["channel"] != "email" {
		t.Fatalf("create: %d %v; want 201 by email", w.Code, m)
	}
	path := "/api/v1/digests/" + id(int64(m["id"].(float64)))
	next := m["next_slot_at"]

	w = h.do(call{method: "PATCH", path: path, token: tok, body: map[string]any{"channel": "webhook", "target": "https://hooks.example.net/d"}})
	m = decode(t, w)
	secret, _ := m["signing_secret"].(string)
	if w.Code != http.StatusOK || m["channel"] != "webhook" || !strings.HasPrefix(secret, "whsec_") || m["next_slot_at"] != next {
		t.Fatalf("to a webhook: %d %v; want 200, a whsec_ secret and the next slot %v kept", w.Code, m, next)
	}
	if g := decode(t, h.do(call{method: "GET", path: path, token: tok})); g["channel"] != "webhook" || g["signing_secret"] != nil {
		t.Errorf("read back: %v; want the webhook and no secret", g)
	}
	secret = repeatWebhook(t, h, tok, path, "https://hooks.example.net/d", secret, func() string {
		d, err := h.st.AccountDigest(ctx, u.ID, int64(m["id"].(float64)))
		if err != nil {
			t.Fatal(err)
		}
		return d.ChannelSecret
	})
	w = h.do(call{method: "PATCH", path: path, token: tok, docInvalid: true,
		body: map[string]any{"name": "Renamed", "channel": "pigeon", "target": "https://x.example.net/"}})
	if p := decode(t, w); w.Code != http.StatusBadRequest || p["field"] != "channel" {
		t.Errorf("unknown channel: %d %v; want a 400 on channel", w.Code, p)
	}
	ds, err := h.st.DigestsOfUser(ctx, u.ID)
	if err != nil || len(ds) != 1 || ds[0].Name != "Daily" || ds[0].Channel != "webhook" || ds[0].ChannelSecret != secret {
		t.Fatalf("after a refused change: %+v %v; want Daily by the webhook with its secret", ds, err)
	}
	w = h.do(call{method: "PATCH", path: path, token: tok, body: map[string]any{"channel": "email"}})
	if p := decode(t, w); w.Code != http.StatusOK || p["channel"] != "email" || p["target"] != nil || p["signing_secret"] != nil {
		t.Errorf("back to email: %d %v", w.Code, p)
	}
	if d, err := h.st.AccountDigest(ctx, u.ID, ds[0].ID); err != nil || d.Target != "" || d.ChannelSecret != "" {
		t.Errorf("stored after email: %+v %v; want no target or secret", d, err)
	}
}

// repeatWebhook PATCHes path with the webhook and target it already has:
// the stored secret stays (stored() reads it) and the answer shows none,
// so the receiver's checks go on passing. A new target then makes a new
// secret, shown once; repeatWebhook returns it.
func repeatWebhook(t *testing.T, h *harness, tok, path, target, secret string, stored func() string) string {
	t.Helper()
	w := h.do(call{method: "PATCH", path: path, token: tok, body: map[string]any{"channel": "webhook", "target": target}})
	if p := decode(t, w); w.Code != http.StatusOK || p["signing_secret"] != nil || stored() != secret {
		t.Errorf("the same webhook again: %d %v, stored secret changed %v; want 200, no secret shown, the secret kept",
			w.Code, p, stored() != secret)
	}
	w = h.do(call{method: "PATCH", path: path, token: tok, body: map[string]any{"channel": "webhook", "target": target + "/v2"}})
	p := decode(t, w)
	fresh, _ := p["signing_secret"].(string)
	if w.Code != http.StatusOK || !strings.HasPrefix(fresh, "whsec_") || fresh == secret || stored() != fresh {
		t.Errorf("a new target: %d %v; want 200 and a new secret, stored", w.Code, p)
	}
	return fresh
}

// TestSubscribeAgainAnswers200: a POST for a feed the account already
// follows changes that subscription and answers 200 with it (no
// Location); only a new subscription answers 201.
func TestSubscribeAgainAnswers200(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	_, tok := h.user("again@example.org")
	f := h.farm.AddFeed(farm.Spec{Title: "Posts", ItemCount: 2})
	cases := []struct {
		name     string
		body     map[string]any
		code     int
		location bool
		format   string
	}{
		{"first", map[string]any{"feed_url": f.URL()}, http.StatusCreated, true, "full"},
		{"again, new settings", map[string]any{"feed_url": f.URL(), "format": "summary"}, http.StatusOK, false, "summary"},
	}
	var first any
	for _, c := range cases {
		w := h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: c.body})
		m := decode(t, w)
		if w.Code != c.code || (w.Header().Get("Location") != "") != c.location || m["format"] != c.format {
			t.Errorf("%s: %d, Location %q, %v; want %d, a Location %v, format %s", c.name, w.Code, w.Header().Get("Location"), m, c.code, c.location, c.format)
		}
		if first == nil {
			first = m["id"]
		} else if m["id"] != first {
			t.Errorf("%s: id %v; want the first subscription's %v", c.name, m["id"], first)
		}
	}
}
