package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCheckToken: a token works until revoked; a changed character, a
// token of the wrong shape or an unknown key does not.
func TestCheckToken(t *testing.T) {
	h := newHarness(t, Limit{})
	ctx := context.Background()
	u, tok := h.user("a@example.org")
	flip := []byte(tok)
	flip[len(flip)-1] ^= 1
	other := []byte(tok)
	other[5] = map[bool]byte{true: 'a', false: 'b'}[other[5] != 'a']
	for _, c := range []struct {
		name, tok string
		ok        bool
	}{
		{"as issued", tok, true},
		{"last character changed", string(flip), false},
		{"unknown key", string(other), false},
		{"cut short", tok[:len(tok)-1], false},
		{"no prefix", strings.TrimPrefix(tok, "fm_"), false},
		{"empty", "", false},
	} {
		got, err := checkToken(ctx, h.st, c.tok)
		if c.ok != (err == nil) || (c.ok && got.UserID != u.ID) {
			t.Errorf("%s: %v, %v; want ok=%v", c.name, got, err, c.ok)
		}
	}
	got, _ := checkToken(ctx, h.st, tok)
	if _, err := h.st.RevokeAPIToken(ctx, u.ID+1, got.ID); err == nil {
		t.Errorf("another account revoked the token")
	}
	if _, err := h.st.RevokeAPIToken(ctx, u.ID, got.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := checkToken(ctx, h.st, tok); err != errBadToken {
		t.Errorf("revoked token: %v, want errBadToken", err)
	}
}

// TestNoCookieAuth: a request with an account's cookies or a token in the
// query string, but no Authorization header, is a 401.
func TestNoCookieAuth(t *testing.T) {
	h := newHarness(t, Limit{})
	_, tok := h.user("a@example.org")
	path := "/api/v1/balance?access_token=" + tok
	mk := func() *http.Request {
		r := httptest.NewRequest("GET", "http://feedmail.test"+path, nil)
		r.AddCookie(&http.Cookie{Name: "token", Value: tok})
		r.Header.Set("Authorization", "Basic "+tok)
		return r
	}
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, mk())
	h.checkDoc(call{method: "GET", path: path}, mk(), w)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("cookie, query and Basic: %d, want 401", w.Code)
	}
}

// TestRateLimit: past its burst a token gets 429 problems with
// Retry-After, another token is not slowed, and the bucket refills.
func TestRateLimit(t *testing.T) {
	h := newHarness(t, Limit{Every: 30 * time.Second, Burst: 2})
	_, a := h.user("a@example.org")
	_, b := h.user("b@example.org")
	get := func(tok string) *httptest.ResponseRecorder {
		return h.do(call{method: "GET", path: "/api/v1/balance", token: tok})
	}
	for i := range 2 {
		if w := get(a); w.Code != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, w.Code)
		}
	}
	w := get(a)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" || !isProblem(w) {
		t.Fatalf("past the burst: %d, Retry-After %q, %s; want a 429 problem, Retry-After 30", w.Code,
			w.Header().Get("Retry-After"), w.Body.String())
	}
	if w := get(b); w.Code != 200 {
		t.Errorf("another token: %d, want 200", w.Code)
	}
	h.clk.Advance(30 * time.Second)
	if w := get(a); w.Code != 200 {
		t.Errorf("after Retry-After: %d, want 200", w.Code)
	}
}

// TestLastUse: a token's last use is recorded on its first request and
// then at most once a minute, however many requests it makes.
func TestLastUse(t *testing.T) {
	h := newHarness(t, Limit{Every: time.Nanosecond, Burst: 100})
	ctx := context.Background()
	_, tok := h.user("a@example.org")
	lastUse := func() time.Time {
		t.Helper()
		got, err := checkToken(ctx, h.st, tok)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastUsedAt == nil {
			return time.Time{}
		}
		return got.LastUsedAt.UTC()
	}
	if !lastUse().IsZero() {
		t.Fatalf("a new token has a last use")
	}
	start := h.clk.Now()
	steps := []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, start},
		{20 * time.Second, start},
		{39 * time.Second, start},
		{time.Second, start.Add(time.Minute)},
		{59 * time.Second, start.Add(time.Minute)},
	}
	for i, s := range steps {
		h.clk.Advance(s.advance)
		if w := h.do(call{method: "GET", path: "/api/v1/balance", token: tok}); w.Code != 200 {
			t.Fatalf("step %d: %d", i, w.Code)
		}
		if got := lastUse(); !got.Equal(s.want) {
			t.Errorf("step %d at %s: last use %s, want %s", i, h.clk.Now(), got, s.want)
		}
	}
}

// TestUnknownRoutes: under /api/v1 an unknown path is a 404 problem and a
// known path with another method a 405 problem with Allow.
func TestUnknownRoutes(t *testing.T) {
	h := newHarness(t, Limit{})
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/api/v1/nope", 404, ""},
		{"GET", "/api/v1/subscriptions/1/extra", 404, ""},
		{"PUT", "/api/v1/subscriptions/1", 405, "GET, PATCH, DELETE"},
		{"DELETE", "/api/v1/digests", 405, "GET, POST"},
	} {
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.code || !isProblem(w) || w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q, %s; want a %d problem, Allow %q", c.method, c.path, w.Code,
				w.Header().Get("Allow"), w.Body.String(), c.code, c.allow)
		}
	}
}

// TestBodies: a body that is not JSON, has unknown members, is another
// media type or is too large is refused with a problem, and changes
// nothing.
func TestBodies(t *testing.T) {
	h := newHarness(t, Limit{})
	u, tok := h.user("a@example.org")
	sub := h.subscribed(u, "http://feeds.test/a")
	path := "/api/v1/subscriptions/" + id(sub.ID)
	for _, c := range []struct {
		name, ctype, body string
		code              int
	}{
		{"not JSON", "application/json", "{", 400},
		{"unknown member", "application/json", `{"formatt": "title"}`, 400},
		{"wrong type", "application/json", `{"format": 3}`, 400},
		{"two values", "application/json", `{"format": "title"} {}`, 400},
		{"form", "application/x-www-form-urlencoded", "format=title", 415},
		{"too large", "application/json", `{"include": "` + strings.Repeat("a", maxBody) + `"}`, 413},
		{"paused_until without paused", "application/json", `{"paused_until": "2026-04-01T00:00:00Z"}`, 400},
		{"pause in the past", "application/json", `{"paused": true, "paused_until": "2026-01-01T00:00:00Z"}`, 400},
		{"digest of nobody", "application/json", `{"digest_id": 999}`, 404},
	} {
		w := h.do(call{method: "PATCH", path: path, token: tok, body: c.body, ctype: c.ctype, docInvalid: true})
		if w.Code != c.code || !isProblem(w) {
			t.Errorf("%s: %d %s; want a %d problem", c.name, w.Code, w.Body.String(), c.code)
		}
	}
	got, err := h.st.AccountSubscriptionView(context.Background(), u.ID, sub.ID)
	if err != nil || got.Format != "full" || got.PausedAt != nil || got.IncludeTerms != "" || got.DigestID != nil {
		t.Errorf("after bad requests: %+v, %v; want it unchanged", got, err)
	}
}
