package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// tamper changes one character in the middle of a token.
func tamper(tok string) string {
	b := []byte(tok)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestTokenLinksNeverFail500(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	sub := h.subsOf(u)[0]
	now := h.clk.Now()
	confirm := h.sign.Sign(token.Confirm, sub.ID, now.Add(time.Hour))
	unsub := h.sign.Sign(token.Unsubscribe, sub.ID, time.Time{})
	account := h.sign.SignIssued(token.Account, u.ID, now, now.Add(time.Hour))
	expired := func(p string, id int64) string { return h.sign.Sign(p, id, now.Add(-time.Second)) }

	cases := []struct {
		name, method, path string
		want               int
		says               string
	}{
		{"confirm tampered", "GET", "/confirm/" + tamper(confirm), 400, "does not work"},
		{"confirm tampered POST", "POST", "/confirm/" + tamper(confirm), 400, "does not work"},
		{"confirm expired", "GET", "/confirm/" + expired(token.Confirm, sub.ID), 410, "expired"},
		{"confirm expired POST", "POST", "/confirm/" + expired(token.Confirm, sub.ID), 410, "expired"},
		{"confirm with an unsubscribe token", "POST", "/confirm/" + unsub, 400, "something else"},
		{"confirm garbage", "GET", "/confirm/%3Cscript%3E", 400, "does not work"},
		{"confirm too long", "GET", "/confirm/" + strings.Repeat("A", 600), 400, "does not work"},
		{"confirm unknown subscription", "POST", "/confirm/" + h.sign.Sign(token.Confirm, 9999, now.Add(time.Hour)), 410, "no longer exists"},
		{"account tampered", "GET", "/account/" + tamper(account), 400, "does not work"},
		{"account expired", "GET", "/account/" + expired(token.Account, u.ID), 410, "expired"},
		{"account with a confirm token", "GET", "/account/" + confirm, 400, "something else"},
		{"account action tampered", "POST", "/account/" + tamper(account) + "/digests", 400, "does not work"},
		{"account unknown user", "GET", "/account/" + h.sign.Sign(token.Account, 9999, now.Add(time.Hour)), 410, "no longer exists"},
		{"unsubscribe tampered", "GET", "/unsubscribe/" + tamper(unsub), 400, "does not work"},
		{"unsubscribe tampered POST", "POST", "/unsubscribe/" + tamper(unsub), 400, "does not work"},
		{"unsubscribe with an account token", "POST", "/unsubscribe/" + account, 400, "something else"},
		{"unsubscribe unknown subscription", "POST", "/unsubscribe/" + h.sign.Sign(token.Unsubscribe, 9999, time.Time{}), 200, "unsubscribed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var form url.Values
			if c.method == "POST" {
				form = url.Values{}
			}
			w := h.do(req{method: c.method, path: c.path, form: form})
			if w.Code != c.want || !strings.Contains(w.Body.String(), c.says) {
				t.Fatalf("%d, want %d saying %q\n%s", w.Code, c.want, c.says, w.Body.String())
			}
		})
	}
	if subs := h.subsOf(u); len(subs) != 1 || subs[0].State != store.SubActive {
		t.Fatalf("bad links changed something: %+v", subs)
	}
}

func TestConfirmLinkExpiresAndIsUsedUp(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	h.signup("ann@example.com", f.URL(), "instant")
	link := h.lastLink()
	h.clk.Advance(8 * 24 * time.Hour)
	if w := h.post(link, nil); w.Code != http.StatusGone || !strings.Contains(w.Body.String(), "expired") {
		t.Fatalf("8-day-old confirm link: %d", w.Code)
	}
	// A fresh one works; once the subscription has ended the link is used up.
	h.signup("ann@example.com", f.URL(), "instant")
	link = h.lastLink()
	if w := h.post(link, nil); w.Code != http.StatusOK {
		t.Fatalf("confirm: %d", w.Code)
	}
	u, _ := h.st.UserByEmail(context.Background(), "ann@example.com")
	if w := h.post("/unsubscribe/"+h.sign.Sign(token.Unsubscribe, h.subsOf(u)[0].ID, time.Time{}), nil); w.Code != http.StatusOK {
		t.Fatal(w.Code)
	}
	for _, m := range []string{"GET", "POST"} {
		w := h.do(req{method: m, path: link, form: url.Values{}})
		if w.Code != http.StatusGone || !strings.Contains(w.Body.String(), "already used") {
			t.Fatalf("%s reused confirm link: %d\n%s", m, w.Code, w.Body.String())
		}
	}
	if subs := h.subsOf(u); len(subs) != 0 {
		t.Fatalf("a reused link revived the subscription: %+v", subs)
	}
}

func TestOneClickUnsubscribe(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	sub := h.subsOf(u)[0]
	path := strings.TrimPrefix(h.links.Unsubscribe(sub.ID), "http://feedmail.test")

	// GET only shows a button.
	w := h.get(path)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<form method="post" action="`+path+`"`) {
		t.Fatalf("GET: %d\n%s", w.Code, w.Body.String())
	}
	if h.subsOf(u)[0].State != store.SubActive {
		t.Fatal("GET unsubscribed")
	}
	// RFC 8058: a POST from a mail provider, cross-origin, no cookie.
	oneClick := func() {
		t.Helper()
		w := h.do(req{method: "POST", path: path, form: url.Values{"List-Unsubscribe": {"One-Click"}},
			header: map[string]string{"Origin": "https://mail.example", "Sec-Fetch-Site": "cross-site"}})
		if w.Code != http.StatusOK {
			t.Fatalf("one-click POST: %d, want 200\n%s", w.Code, w.Body.String())
		}
		if loc := w.Header().Get("Location"); loc != "" {
			t.Fatalf("one-click redirected to %s", loc)
		}
		if len(w.Result().Cookies()) != 0 {
			t.Fatal("one-click set a cookie")
		}
		if !strings.Contains(w.Body.String(), "You are unsubscribed") {
			t.Fatalf("one-click page: %s", w.Body.String())
		}
	}
	oneClick()
	s, _ := h.st.SubscriptionByID(context.Background(), sub.ID)
	if s.State != store.SubEnded {
		t.Fatalf("state %s", s.State)
	}
	ended := *s.EndedAt
	h.clk.Advance(time.Hour)
	oneClick() // idempotent
	s, _ = h.st.SubscriptionByID(context.Background(), sub.ID)
	if s.State != store.SubEnded || !s.EndedAt.Equal(ended) {
		t.Fatalf("second one-click changed the subscription: %+v", s)
	}
	if feed, _ := h.st.FeedByURL(context.Background(), f.URL()); feed.SubscriberCount != 0 {
		t.Fatalf("subscriber count %d", feed.SubscriberCount)
	}
}

func TestDigestUnsubscribeEndsTheDigest(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.feed("A"), h.feed("B"), h.feed("C")
	u := h.subscribeConfirmed("ann@example.com", a.URL(), "daily")
	h.subscribeConfirmed("ann@example.com", b.URL(), "daily")
	h.subscribeConfirmed("ann@example.com", c.URL(), "instant")
	subs := h.subsOf(u)
	if subs[0].DigestID == nil || subs[1].DigestID == nil || *subs[0].DigestID != *subs[1].DigestID {
		t.Fatalf("%+v", subs)
	}
	path := strings.TrimPrefix(h.links.DigestUnsubscribe(*subs[0].DigestID), "http://feedmail.test")
	w := h.get(path)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Daily") || !strings.Contains(w.Body.String(), ">A<") {
		t.Fatalf("GET: %d\n%s", w.Code, w.Body.String())
	}
	for range 2 {
		w = h.do(req{method: "POST", path: path, form: url.Values{"List-Unsubscribe": {"One-Click"}},
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
		if w.Code != http.StatusOK || w.Header().Get("Location") != "" {
			t.Fatalf("POST: %d", w.Code)
		}
	}
	left := h.subsOf(u)
	if len(left) != 1 || left[0].FeedTitle != "C" {
		t.Fatalf("left: %+v", left)
	}
}

// Following a confirmation link proves the address receives mail again: a
// "bouncing" mark from earlier hard failures is cleared.
func TestConfirmClearsBouncing(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Feed")
	h.signup("ann@example.com", f.URL(), "instant")
	link := h.lastLink()
	u, err := h.st.UserByEmail(context.Background(), "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.DB.Exec("UPDATE users SET hard_bounces = 3, bouncing_since = ? WHERE id = ?", h.clk.Now(), u.ID).Error; err != nil {
		t.Fatal(err)
	}
	if w := h.post(link, nil); w.Code != http.StatusOK {
		t.Fatalf("confirm: %d", w.Code)
	}
	u, err = h.st.UserByID(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.BouncingSince != nil || u.HardBounces != 0 {
		t.Fatalf("still bouncing after confirming: since %v, %d hard bounces", u.BouncingSince, u.HardBounces)
	}
}
