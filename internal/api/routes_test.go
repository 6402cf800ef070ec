package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// world is two accounts, A (whose token the tests use) and B, each with a
// subscription, a digest and a feed only they follow.
type world struct {
	a, b                *store.User
	tokA, tokB, revoked string
	subA, subDel, subB  *store.Subscription
	digestA, digestB    *store.Digest
	feedURL             string // a feed on the farm nobody follows yet
	feedA, feedB        int64
}

func newWorld(t *testing.T, h *harness) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{}
	w.a, w.tokA = h.user("a@example.org")
	w.b, w.tokB = h.user("b@example.org")
	var err error
	w.revoked, _, err = IssueToken(ctx, h.st, w.a.ID, "old")
	if err != nil {
		t.Fatal(err)
	}
	old, err := checkToken(ctx, h.st, w.revoked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.RevokeAPIToken(ctx, w.a.ID, old.ID); err != nil {
		t.Fatal(err)
	}
	w.subA = h.subscribed(w.a, "http://feeds.test/a")
	w.subDel = h.subscribed(w.a, "http://feeds.test/a-too")
	w.subB = h.subscribed(w.b, "http://feeds.test/b")
	w.feedA, w.feedB = w.subA.FeedID, w.subB.FeedID
	sched := mustSchedule(t, "daily")
	if w.digestA, err = h.st.SaveAccountDigest(ctx, w.a.ID, 0, "Morning", sched); err != nil {
		t.Fatal(err)
	}
	if w.digestB, err = h.st.SaveAccountDigest(ctx, w.b.ID, 0, "Evening", sched); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*store.User{w.a, w.b} {
		if _, err := h.st.PostLedgerEntry(ctx, u.ID, store.LedgerGrant, 40, fmt.Sprintf("gift-%d", u.ID), "gift"); err != nil {
			t.Fatal(err)
		}
	}
	w.feedURL = h.farm.AddFeed(farm.Spec{Title: "Fresh", ItemCount: 3}).URL()
	return w
}

// routeCase is the tests of one route: a request that succeeds, one
// naming another account's object (404; for a route that names none, a
// success that must show nothing of the other account), and bad input
// (400). The 401 cases (no token, a revoked one) are the success request
// without its token.
type routeCase struct {
	name         string
	ok           func(w *world) call
	okStatus     int
	okCheck      func(t *testing.T, w *world, m map[string]any, rec *httptest.ResponseRecorder)
	other        func(w *world) call
	otherStatus  int
	otherCheck   func(t *testing.T, w *world, m map[string]any)
	bad          func(w *world) call
	badDocRefuse bool // openapi.json refuses the bad request too
}

func id(v int64) string { return fmt.Sprint(v) }

// mustSchedule parses a digest schedule in UTC.
func mustSchedule(t *testing.T, spec string) *digest.Schedule {
	t.Helper()
	s, err := digest.ParseSchedule(spec, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// routeCases are the cases of every route, in openapi.json's order.
func routeCases() []routeCase {
	return slices.Concat(subscriptionCases(), subscriptionChangeCases(), digestCases(), accountCases())
}

// getA is a GET of path with account A's token.
func getA(path string) func(*world) call {
	return func(w *world) call { return call{method: "GET", path: path, token: w.tokA} }
}

// noB fails the test when m shows anything of account B's.
func noB(what string) func(t *testing.T, w *world, m map[string]any) {
	return func(t *testing.T, w *world, m map[string]any) {
		if s := fmt.Sprint(m); strings.Contains(s, "b@example.org") || strings.Contains(s, "feeds.test/b") {
			t.Errorf("%s shows account B's data: %s", what, s)
		}
	}
}

// subscriptionCases are the cases of the subscription routes.
func subscriptionCases() []routeCase {
	get := getA
	return []routeCase{
		{
			name: "list subscriptions", ok: get("/api/v1/subscriptions"), okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if items := m["items"].([]any); len(items) != 2 || m["next_cursor"] != nil {
					t.Errorf("items %v, next_cursor %v; want A's 2 subscriptions on one page", items, m["next_cursor"])
				}
			},
			other: get("/api/v1/subscriptions"), otherStatus: 200, otherCheck: noB("the list"),
			bad: get("/api/v1/subscriptions?limit=0"), badDocRefuse: true,
		},
		{
			name: "create subscription",
			ok: func(w *world) call {
				return call{method: "POST", path: "/api/v1/subscriptions", token: w.tokA,
					body: map[string]any{"feed_url": w.feedURL, "format": "summary", "include": "go, rust", "digest_id": w.digestA.ID}}
			},
			okStatus: 201,
			okCheck: func(t *testing.T, w *world, m map[string]any, rec *httptest.ResponseRecorder) {
				if m["state"] != "active" || m["format"] != "summary" || m["include"] != "go, rust" ||
					m["digest_name"] != "Morning" || m["feed_url"] != w.feedURL {
					t.Errorf("created %v", m)
				}
				if loc := rec.Header().Get("Location"); loc != fmt.Sprintf("/api/v1/subscriptions/%v", m["id"]) {
					t.Errorf("Location %q", loc)
				}
			},
			other: func(w *world) call {
				return call{method: "POST", path: "/api/v1/subscriptions", token: w.tokA,
					body: map[string]any{"feed_url": w.feedURL, "digest_id": w.digestB.ID}}
			},
			otherStatus: 404,
			bad: func(w *world) call {
				return call{method: "POST", path: "/api/v1/subscriptions", token: w.tokA, body: map[string]any{"feed_url": "mailto:x@y"}}
			},
		},
		{
			name: "get subscription", ok: func(w *world) call { return get("/api/v1/subscriptions/" + id(w.subA.ID))(w) }, okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["id"] != float64(w.subA.ID) || m["feed_url"] != "http://feeds.test/a" || m["digest_id"] != nil {
					t.Errorf("got %v", m)
				}
			},
			other:       func(w *world) call { return get("/api/v1/subscriptions/" + id(w.subB.ID))(w) },
			otherStatus: 404,
			bad:         get("/api/v1/subscriptions/abc"), badDocRefuse: true,
		},
	}
}

// subscriptionChangeCases are the cases of the routes that change a
// subscription.
func subscriptionChangeCases() []routeCase {
	return []routeCase{
		{
			name: "change subscription",
			ok: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/subscriptions/" + id(w.subA.ID), token: w.tokA,
					body: map[string]any{"exclude": "ads", "format": "title", "digest_id": w.digestA.ID, "paused": true,
						"paused_until": "2026-03-09T09:00:00Z"}}
			},
			okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["exclude"] != "ads" || m["format"] != "title" || m["digest_id"] != float64(w.digestA.ID) ||
					m["paused"] != true || m["paused_until"] != "2026-03-09T09:00:00Z" {
					t.Errorf("changed %v", m)
				}
			},
			other: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/subscriptions/" + id(w.subB.ID), token: w.tokA, body: map[string]any{"format": "title"}}
			},
			otherStatus: 404,
			bad: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/subscriptions/" + id(w.subA.ID), token: w.tokA, body: map[string]any{"include": "/[/"}}
			},
		},
		{
			name: "delete subscription",
			ok: func(w *world) call {
				return call{method: "DELETE", path: "/api/v1/subscriptions/" + id(w.subDel.ID), token: w.tokA}
			},
			okStatus: 204,
			other: func(w *world) call {
				return call{method: "DELETE", path: "/api/v1/subscriptions/" + id(w.subB.ID), token: w.tokA}
			},
			otherStatus: 404,
			bad: func(w *world) call {
				return call{method: "DELETE", path: "/api/v1/subscriptions/0", token: w.tokA}
			},
			badDocRefuse: true,
		},
	}
}

// digestCases are the cases of the digest routes.
func digestCases() []routeCase {
	get := getA
	return []routeCase{
		{
			name: "list digests", ok: get("/api/v1/digests"), okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if items := m["items"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "Morning" {
					t.Errorf("digests %v", items)
				}
			},
			other: get("/api/v1/digests"), otherStatus: 200, otherCheck: noB("the digests"),
			bad: get("/api/v1/digests?limit=5"),
		},
		{
			name: "create digest",
			ok: func(w *world) call {
				return call{method: "POST", path: "/api/v1/digests", token: w.tokA,
					body: map[string]any{"name": "Weekend", "schedule": "0 9 * * 6", "timezone": "Europe/Berlin",
						"channel": "webhook", "target": "https://hooks.example.net/weekend"}}
			},
			okStatus: 201,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				// Saturday 7 March 2026, 09:00 in Berlin.
				if m["name"] != "Weekend" || m["timezone"] != "Europe/Berlin" || m["next_slot_at"] != "2026-03-07T08:00:00Z" {
					t.Errorf("created %v", m)
				}
				if secret, _ := m["signing_secret"].(string); m["channel"] != "webhook" || m["target"] != "https://hooks.example.net/weekend" ||
					!strings.HasPrefix(secret, "whsec_") {
					t.Errorf("created %v; want the webhook, its target and a whsec_ signing secret", m)
				}
			},
			// B's digest name is free for A.
			other: func(w *world) call {
				return call{method: "POST", path: "/api/v1/digests", token: w.tokA, body: map[string]any{"name": "Evening", "schedule": "daily"}}
			},
			otherStatus: 201, otherCheck: func(t *testing.T, w *world, m map[string]any) {
				if m["name"] != "Evening" {
					t.Errorf("created %v", m)
				}
			},
			bad: func(w *world) call {
				return call{method: "POST", path: "/api/v1/digests", token: w.tokA, body: map[string]any{"name": "X", "schedule": "every blue moon"}}
			},
		},
		{
			name: "get digest", ok: func(w *world) call { return get("/api/v1/digests/" + id(w.digestA.ID))(w) }, okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["name"] != "Morning" || m["channel"] != "email" || m["target"] != nil || m["signing_secret"] != nil {
					t.Errorf("got %v; want Morning by email, no target or secret", m)
				}
			},
			other:       func(w *world) call { return get("/api/v1/digests/" + id(w.digestB.ID))(w) },
			otherStatus: 404,
			bad:         get("/api/v1/digests/-3"), badDocRefuse: true,
		},
		{
			name: "set digest schedule",
			ok: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestA.ID), token: w.tokA,
					body: map[string]any{"schedule": "0 18 * * *"}}
			},
			okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["schedule"] != "0 18 * * *" || m["name"] != "Morning" || m["next_slot_at"] != "2026-03-02T18:00:00Z" {
					t.Errorf("changed %v", m)
				}
			},
			other: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestB.ID), token: w.tokA, body: map[string]any{"schedule": "daily"}}
			},
			otherStatus: 404,
			bad: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestA.ID), token: w.tokA, body: map[string]any{"timezone": "Mars/Olympus"}}
			},
		},
		{
			name: "set digest channel",
			ok: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestA.ID), token: w.tokA,
					body: map[string]any{"channel": "ntfy", "target": "https://ntfy.example.net/morning", "token": "tk_morning"}}
			},
			okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, rec *httptest.ResponseRecorder) {
				if m["channel"] != "ntfy" || m["target"] != "https://ntfy.example.net/morning" || m["signing_secret"] != nil ||
					strings.Contains(rec.Body.String(), "tk_morning") || m["schedule"] != "0 18 * * *" {
					t.Errorf("changed %v; want ntfy at its target, the token not shown, the schedule kept", m)
				}
			},
			other: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestB.ID), token: w.tokA,
					body: map[string]any{"channel": "slack", "target": "https://hooks.example.net/b"}}
			},
			otherStatus: 404,
			bad: func(w *world) call {
				return call{method: "PATCH", path: "/api/v1/digests/" + id(w.digestA.ID), token: w.tokA,
					body: map[string]any{"channel": "matrix", "target": "https://hs.example.net#!r:hs.example.net"}}
			},
		},
	}
}

// accountCases are the cases of the feed status, credits and export routes.
func accountCases() []routeCase {
	get := getA
	return []routeCase{
		{
			name: "feed status", ok: func(w *world) call { return get("/api/v1/feeds/" + id(w.feedA))(w) }, okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["url"] != "http://feeds.test/a" || m["state"] != "active" {
					t.Errorf("status %v", m)
				}
			},
			other:       func(w *world) call { return get("/api/v1/feeds/" + id(w.feedB))(w) },
			otherStatus: 404,
			bad:         get("/api/v1/feeds/1.5"), badDocRefuse: true,
		},
		{
			name: "balance", ok: get("/api/v1/balance"), okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				// The gift, and the trial credits of the first subscription made here.
				if m["balance"] != float64(140) {
					t.Errorf("balance %v, want 140", m)
				}
			},
			other: get("/api/v1/balance"), otherStatus: 200, otherCheck: noB("the balance"),
			bad: get("/api/v1/balance?email=b@example.org"),
		},
		{
			name: "ledger", ok: get("/api/v1/ledger?limit=1"), okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				items := m["items"].([]any)
				if len(items) != 1 || items[0].(map[string]any)["reason"] != "trial credits" || m["next_cursor"] == nil {
					t.Errorf("ledger %v; want the newest entry, the trial, and a next page", m)
				}
			},
			other: get("/api/v1/ledger"), otherStatus: 200, otherCheck: noB("the ledger"),
			bad: get("/api/v1/ledger?cursor=nonsense"),
		},
		{
			name: "export", ok: get("/api/v1/export"), okStatus: 200,
			okCheck: func(t *testing.T, w *world, m map[string]any, _ *httptest.ResponseRecorder) {
				if m["email"] != "a@example.org" || len(m["subscriptions"].([]any)) < 2 || len(m["api_tokens"].([]any)) != 2 {
					t.Errorf("export %v", m)
				}
			},
			other: get("/api/v1/export"), otherStatus: 200, otherCheck: noB("the export"),
			bad: get("/api/v1/export?format=csv"),
		},
	}
}

// TestRoutes: every route answers a good request, refuses a request
// without a token or with a revoked one (401), does not reach another
// account's objects (404, or nothing of them shown), and refuses bad input
// with a problem (400); every request and answer is held to openapi.json.
func TestRoutes(t *testing.T) {
	h := newHarness(t, Limit{Every: time.Nanosecond, Burst: 1000})
	w := newWorld(t, h)
	for _, rc := range routeCases() {
		t.Run(rc.name, func(t *testing.T) {
			h.t = t
			for _, tok := range []struct{ name, token string }{{"no token", ""}, {"revoked token", w.revoked}, {"bad token", "fm_nope"}} {
				c := rc.ok(w)
				c.token = tok.token
				rec := h.do(c)
				if rec.Code != http.StatusUnauthorized || !isProblem(rec) || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: %d %q %s; want a 401 problem with a Bearer challenge", tok.name, rec.Code,
						rec.Header().Get("Content-Type"), rec.Body.String())
				}
			}
			c := rc.bad(w)
			c.docInvalid = true
			rec := h.do(c)
			if rec.Code != http.StatusBadRequest || !isProblem(rec) {
				t.Errorf("bad input %s %s: %d %s; want a 400 problem", c.method, c.path, rec.Code, rec.Body.String())
			}
			if rc.badDocRefuse {
				h.mustRefuse(c)
			}
			rec = h.do(rc.other(w))
			if rec.Code != rc.otherStatus || (rc.otherStatus == 404) != isProblem(rec) {
				t.Errorf("other account: %d %s; want %d", rec.Code, rec.Body.String(), rc.otherStatus)
			}
			if rc.otherCheck != nil && rec.Code < 300 {
				rc.otherCheck(t, w, decode(t, rec))
			}
			rec = h.do(rc.ok(w))
			if rec.Code != rc.okStatus {
				t.Fatalf("success: %d %s; want %d", rec.Code, rec.Body.String(), rc.okStatus)
			}
			if rc.okCheck != nil {
				rc.okCheck(t, w, decode(t, rec), rec)
			}
		})
	}
}

// isProblem reports whether rec is an RFC 9457 problem whose status
// member matches the answer's.
func isProblem(rec *httptest.ResponseRecorder) bool {
	if rec.Header().Get("Content-Type") != problemJSONType {
		return false
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		return false
	}
	return p.Status == rec.Code && p.Type != "" && p.Title != ""
}
