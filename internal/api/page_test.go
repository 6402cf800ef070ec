package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestPagination: following next_cursor walks every subscription (by id)
// and every ledger entry (newest first) once, and the last page says so
// with a null cursor.
func TestPagination(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	ctx := context.Background()
	u, tok := h.user("a@example.org")
	other, _ := h.user("b@example.org")
	var wantSubs, wantLedger []float64
	for i := range 5 {
		wantSubs = append(wantSubs, float64(h.subscribed(u, fmt.Sprintf("http://feeds.test/%d", i)).ID))
		h.subscribed(other, fmt.Sprintf("http://feeds.test/o%d", i))
		for _, who := range []*store.User{u, other} {
			r, err := h.st.PostLedgerEntry(ctx, who.ID, store.LedgerGrant, int64(i+1), fmt.Sprintf("g-%d-%d", who.ID, i), "gift")
			if err != nil {
				t.Fatal(err)
			}
			if who == u {
				wantLedger = append([]float64{float64(r.Entry.ID)}, wantLedger...)
			}
		}
	}
	for _, c := range []struct {
		path string
		want []float64
	}{
		{"/api/v1/subscriptions", wantSubs},
		{"/api/v1/ledger", wantLedger},
	} {
		var got []float64
		pages := 0
		next := c.path + "?limit=2"
		for next != "" {
			w := h.do(call{method: "GET", path: next, token: tok})
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", next, w.Code, w.Body.String())
			}
			m := decode(t, w)
			for _, it := range m["items"].([]any) {
				got = append(got, it.(map[string]any)["id"].(float64))
			}
			pages++
			next = ""
			if cur, ok := m["next_cursor"].(string); ok {
				next = c.path + "?limit=2&cursor=" + cur
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || pages != 3 {
			t.Errorf("%s: %d pages of ids %v; want 3 pages of %v", c.path, pages, got, c.want)
		}
	}
}

// TestCreateSubscriptionChecks: the signup form's checks apply: a page
// with several feeds lists them, a feed that is gone or not a feed is a
// 422 problem, and none of these subscribes anyone.
func TestCreateSubscriptionChecks(t *testing.T) {
	h := newHarness(t, Limit{Burst: 1000})
	u, tok := h.user("a@example.org")
	a := h.farm.AddFeed(farm.Spec{Title: "Posts", ItemCount: 2})
	b := h.farm.AddFeed(farm.Spec{Title: "Comments", Format: farm.Atom, ItemCount: 1})
	gone := h.farm.AddFeed(farm.Spec{Title: "Gone", Status: http.StatusGone})
	site := h.farm.AddSite(a, b)
	for _, c := range []struct {
		name, url, typ string
		candidates     int
	}{
		{"several feeds", site, typeSeveral, 2},
		{"gone", gone.URL(), typeFeed, 0},
		{"a page without feeds", h.farm.AddSite(), typeFeed, 0},
	} {
		w := h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: map[string]any{"feed_url": c.url}})
		m := decode(t, w)
		cands, _ := m["candidates"].([]any)
		if w.Code != http.StatusUnprocessableEntity || m["type"] != c.typ || len(cands) != c.candidates || m["field"] != "feed_url" {
			t.Errorf("%s: %d %v; want a 422 %s problem with %d candidates", c.name, w.Code, m, c.typ, c.candidates)
		}
	}
	// A word with no dot and no scheme is not a web address: refused
	// before any lookup, not a DNS error.
	w := h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: map[string]any{"feed_url": "notaurl"}})
	if m := decode(t, w); w.Code != http.StatusBadRequest || m["field"] != "feed_url" || !strings.Contains(fmt.Sprint(m["detail"]), "not a web address") {
		t.Errorf("notaurl: %d %v; want a 400 saying it is not a web address", w.Code, m)
	}
	subs, err := h.st.SubscriptionsOfUser(context.Background(), u.ID)
	if err != nil || len(subs) != 0 {
		t.Errorf("subscriptions after refusals: %v, %v", subs, err)
	}
	w = h.do(call{method: "POST", path: "/api/v1/subscriptions", token: tok, body: map[string]any{"feed_url": a.URL(), "newest": true}})
	if w.Code != http.StatusCreated {
		t.Fatalf("a feed: %d %s", w.Code, w.Body.String())
	}
	sub, err := h.st.SubscriptionByID(context.Background(), int64(decode(t, w)["id"].(float64)))
	if err != nil || sub.State != store.SubActive || sub.ConfirmedBy != store.ConfirmedByAccount {
		t.Errorf("made %+v, %v; want it active, confirmed by the account", sub, err)
	}
}
