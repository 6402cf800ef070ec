package security

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/websub"
)

// tamper flips one bit of a token's MAC and re-encodes it.
func tamper(tok string) string {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return tok + "x"
	}
	b[len(b)-3] ^= 0x04
	return base64.RawURLEncoding.EncodeToString(b)
}

// snapshot is everything a token route could change.
type snapshot struct {
	subs     string
	digests  string
	outbox   int64
	ledger   int64
	purchase int64
	feeds    string
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	var s snapshot
	var subs []store.Subscription
	e.st.DB.Order("id").Find(&subs)
	for _, x := range subs {
		s.subs += fmt.Sprintf("%d:%d:%s:%v;", x.ID, x.UserID, x.State, derefID(x.DigestID))
	}
	var ds []store.Digest
	e.st.DB.Order("id").Find(&ds)
	for _, d := range ds {
		s.digests += fmt.Sprintf("%d:%d:%s:%s:%s;", d.ID, d.UserID, d.Name, d.Schedule, d.Timezone)
	}
	var fs []store.Feed
	e.st.DB.Order("id").Find(&fs)
	for _, f := range fs {
		s.feeds += fmt.Sprintf("%d:%s:%s:%s;", f.ID, f.URL, f.State, f.WebSubState)
	}
	e.st.DB.Model(&store.OutboxRow{}).Count(&s.outbox)
	e.st.DB.Model(&store.LedgerEntry{}).Count(&s.ledger)
	e.st.DB.Model(&store.Purchase{}).Count(&s.purchase)
	return s
}

func derefID(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// opmlUpload is a multipart body with one OPML file.
func opmlUpload() (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "feeds.opml")
	_, _ = fw.Write([]byte(`<opml version="2.0"><body><outline text="x" xmlUrl="https://elsewhere.example/feed"/></body></opml>`))
	_ = mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// TestTokenRoutesRefuseBadTokens sends, to every route that takes a token
// in its path (or form), a token that was tampered with, one past its
// expiry, one made for another purpose, one signed with another secret,
// garbage, and — for the account actions — person A's genuine token used
// on person B's subscription or digest. Every answer is a 4xx (never a
// success, a redirect or a 5xx) and nothing in the database changes. A
// genuine token on each GET route still works, so the refusals are not
// an artefact of the test.
func TestTokenRoutesRefuseBadTokens(t *testing.T) {
	e := newEnv(t, envOpt{})
	f, _, err := e.st.EnsureFeed(e.ctx, "https://tokens.example/feed.xml")
	if err != nil {
		t.Fatal(err)
	}
	a, subA := e.reader("a@example.net", f.ID, "")
	b, subB := e.reader("b@example.net", f.ID, "Evening")
	dB, err := e.st.DigestByName(e.ctx, b.ID, "Evening")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := e.st.Subscribe(e.ctx, b.ID, mustFeed(t, e, "https://pending.example/feed.xml"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetWebSub(e.ctx, f.ID, store.WebSubFields{}, store.WebSubFields{Hub: "https://hub.example/", Topic: f.URL,
		State: store.WebSubStatePending, Secret: "s3cret-s3cret", RenewAt: ptr(t0.Add(time.Hour))}, time.Time{}, ""); err != nil {
		t.Fatal(err)
	}
	other, err := token.NewSigner([]byte("an-entirely-different-secret-42"))
	if err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	acc := e.sign.SignIssued(token.Account, a.ID, now, now.Add(time.Hour))
	conf := e.sign.Sign(token.Confirm, pending.ID, now.Add(time.Hour))
	unsub := e.sign.Sign(token.Unsubscribe, subB.ID, time.Time{})
	dunsub := e.sign.Sign(token.DigestUnsubscribe, dB.ID, time.Time{})
	ws := e.sign.Sign(token.WebSub, f.ID, time.Time{}) + websub.CallbackSep + websub.CallbackTag("s3cret-s3cret")

	// bad tokens by purpose: tampered, expired (when the purpose expires),
	// another purpose, another secret, garbage.
	bad := func(purpose string, subject int64, expires bool, wrong string) map[string]string {
		m := map[string]string{
			"tampered":        tamper(e.sign.Sign(purpose, subject, now.Add(time.Hour))),
			"another secret":  other.Sign(purpose, subject, now.Add(time.Hour)),
			"another purpose": wrong,
			"garbage":         "AAAA",
			"script":          url.PathEscape(`<script>alert(1)</script>`),
			"too long":        strings.Repeat("A", 600),
		}
		if expires {
			m["expired"] = e.sign.Sign(purpose, subject, now.Add(-time.Second))
		}
		return m
	}
	ct, upload := opmlUpload()
	type route struct {
		method, path string // path with %s for the token
		form         url.Values
		multipart    bool
	}
	routes := []struct {
		purpose string
		subject int64
		expires bool
		wrong   string
		routes  []route
	}{
		{token.Confirm, pending.ID, true, unsub, []route{{"GET", "/confirm/%s", nil, false}, {"POST", "/confirm/%s", url.Values{}, false}}},
		{token.Account, a.ID, true, conf, []route{
			{"GET", "/account/%s", nil, false},
			{"GET", "/account/%s/opml", nil, false},
			{"POST", "/account/%s/subscriptions/" + fmt.Sprint(subA.ID) + "/delivery", url.Values{"delivery": {"instant"}}, false},
			{"POST", "/account/%s/subscriptions/" + fmt.Sprint(subA.ID) + "/unsubscribe", url.Values{}, false},
			{"POST", "/account/%s/subscriptions/" + fmt.Sprint(subA.ID) + "/confirm", url.Values{}, false},
			{"POST", "/account/%s/digests", url.Values{"name": {"New"}, "preset": {"daily"}, "zone": {"UTC"}}, false},
			{"POST", "/account/%s/opml", nil, true},
			{"GET", "/credits?token=%s", nil, false},
			{"POST", "/credits/checkout", url.Values{"pack": {"5000"}, "token": {"%s"}}, false},
		}},
		{token.Unsubscribe, subB.ID, false, acc, []route{{"GET", "/unsubscribe/%s", nil, false}, {"POST", "/unsubscribe/%s", url.Values{}, false}}},
		{token.DigestUnsubscribe, dB.ID, false, acc, []route{{"POST", "/unsubscribe/%s", url.Values{}, false}}},
		{token.WebSub, f.ID, false, acc, []route{
			{"GET", "/websub/%s?hub.mode=subscribe&hub.topic=" + url.QueryEscape(f.URL) + "&hub.challenge=c", nil, false},
			{"POST", "/websub/%s", nil, false},
		}},
	}
	before := e.snapshot()
	for _, g := range routes {
		for kind, tok := range bad(g.purpose, g.subject, g.expires, g.wrong) {
			for _, r := range g.routes {
				path := strings.Replace(r.path, "%s", tok, 1)
				form := r.form
				if form != nil && form.Get("token") == "%s" {
					form = url.Values{"pack": {"5000"}, "token": {tok}}
				}
				name := fmt.Sprintf("%s %s, %s %s token", r.method, r.path, kind, g.purpose)
				t.Run(name, func(t *testing.T) {
					var w *httptest.ResponseRecorder
					if r.multipart {
						req := httptest.NewRequest(r.method, path, bytes.NewReader(upload))
						req.Header.Set("Content-Type", ct)
						w = httptest.NewRecorder()
						e.h.ServeHTTP(w, req)
					} else {
						w = e.request(r.method, path, form, nil)
					}
					if w.Code < 400 || w.Code >= 500 {
						t.Errorf("%d, want a 4xx\n%.300s", w.Code, w.Body.String())
					}
				})
			}
		}
	}
	// Person A's genuine account token on person B's things.
	idor := []struct {
		name string
		path string
		form url.Values
	}{
		{"unsubscribe B's subscription", fmt.Sprintf("/account/%s/subscriptions/%d/unsubscribe", acc, subB.ID), url.Values{}},
		{"move B's subscription to instant", fmt.Sprintf("/account/%s/subscriptions/%d/delivery", acc, subB.ID), url.Values{"delivery": {"instant"}}},
		{"confirm B's pending subscription", fmt.Sprintf("/account/%s/subscriptions/%d/confirm", acc, pending.ID), url.Values{}},
		{"move A's subscription into B's digest", fmt.Sprintf("/account/%s/subscriptions/%d/delivery", acc, subA.ID),
			url.Values{"delivery": {fmt.Sprintf("digest-%d", dB.ID)}}},
		{"rename B's digest", fmt.Sprintf("/account/%s/digests", acc),
			url.Values{"id": {fmt.Sprint(dB.ID)}, "name": {"Pwned"}, "preset": {"daily"}, "zone": {"UTC"}}},
	}
	for _, c := range idor {
		t.Run("A's token: "+c.name, func(t *testing.T) {
			w := e.request("POST", c.path, c.form, nil)
			if w.Code < 400 || w.Code >= 500 {
				t.Errorf("%d, want a 4xx\n%.300s", w.Code, w.Body.String())
			}
		})
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("refused requests changed the database:\n before %+v\n after  %+v", before, after)
	}

	// Controls: the genuine tokens work on the GET routes.
	for _, p := range []string{"/account/" + acc, "/account/" + acc + "/opml", "/confirm/" + conf, "/unsubscribe/" + unsub,
		"/credits?token=" + acc} {
		if w := e.request("GET", p, nil, nil); w.Code != http.StatusOK {
			t.Errorf("genuine GET %s: %d", p, w.Code)
		}
	}
	if w := e.request("GET", "/websub/"+ws+"?hub.mode=subscribe&hub.topic="+url.QueryEscape(f.URL)+"&hub.challenge=c-ok", nil, nil); w.Code != http.StatusOK || w.Body.String() != "c-ok" {
		t.Errorf("genuine WebSub verification: %d %q", w.Code, w.Body.String())
	}
	if w := e.request("POST", fmt.Sprintf("/account/%s/subscriptions/%d/delivery", acc, subA.ID), url.Values{"delivery": {"instant"}}, nil); w.Code != http.StatusSeeOther {
		t.Errorf("genuine account action on A's own subscription: %d", w.Code)
	}
	if w := e.request("POST", "/unsubscribe/"+dunsub, url.Values{}, nil); w.Code != http.StatusOK {
		t.Errorf("genuine digest unsubscribe: %d", w.Code)
	}
	if s, err := e.st.SubscriptionByID(e.ctx, subB.ID); err != nil || s.State != store.SubEnded {
		t.Errorf("the genuine digest unsubscribe did not end B's digest subscription: %+v %v", s, err)
	}
}

func mustFeed(t *testing.T, e *env, u string) int64 {
	t.Helper()
	f, _, err := e.st.EnsureFeed(e.ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	return f.ID
}

func ptr[T any](v T) *T { return &v }
