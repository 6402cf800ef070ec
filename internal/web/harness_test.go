package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
)

// harness is a Server on a fresh store with a fake clock and a feed farm.
type harness struct {
	t     *testing.T
	st    *store.Store
	clk   *clock.Fake
	srv   *Server
	farm  *farm.Farm
	sign  *token.Signer
	links links.Links
}

type harnessOpt func(*Deps)

func withLimits(l Limits) harnessOpt { return func(d *Deps) { d.Limits = &l } }

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := storetest.Open(t, storetest.Options{Clock: clk})
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	cfg := config.Config{BaseURL: "http://feedmail.test", From: "feedmail@feedmail.test", TrialCredits: 500,
		AllowPrivateNetworks: true}
	nolim := NoLimits()
	d := Deps{Store: st, Config: cfg, Clock: clk, Tokens: sign, Limits: &nolim,
		Log:     slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Fetcher: fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 5 * time.Second, BaseURL: cfg.BaseURL})}
	for _, o := range opts {
		o(&d)
	}
	return &harness{t: t, st: d.Store, clk: clk, srv: New(d), farm: fm, sign: sign,
		links: links.New(cfg.BaseURL, sign, cfg.From)}
}

// req is one request to the handler.
type req struct {
	method, path string
	form         url.Values
	header       map[string]string
	remote       string // RemoteAddr, default 192.0.2.1:1234
	body         string // sent when form is nil
}

func (h *harness) do(r req) *httptest.ResponseRecorder {
	h.t.Helper()
	var body *strings.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	} else {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.form != nil {
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.remote != "" {
		hr.RemoteAddr = r.remote
	} else {
		hr.RemoteAddr = "192.0.2.1:1234"
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, hr)
	return w
}

func (h *harness) get(path string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(req{method: "GET", path: path})
}

func (h *harness) post(path string, form url.Values) *httptest.ResponseRecorder {
	h.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	return h.do(req{method: "POST", path: path, form: form})
}

// feed adds a farm feed with a title and three items.
func (h *harness) feed(title string) *farm.Feed {
	return h.farm.AddFeed(farm.Spec{Title: title, ItemCount: 3, ETag: farm.ETagStrong, LastModified: true})
}

// notices returns the queued notice emails, oldest first.
func (h *harness) notices() []store.Notice {
	h.t.Helper()
	var rows []store.OutboxRow
	if err := h.st.DB.Where("kind = ?", store.KindNotice).Order("id").Find(&rows).Error; err != nil {
		h.t.Fatal(err)
	}
	var out []store.Notice
	for i := range rows {
		n, err := store.NoticeOf(&rows[i])
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// lastLink is the URL of the newest notice's first button, as a path.
func (h *harness) lastLink() string {
	h.t.Helper()
	ns := h.notices()
	if len(ns) == 0 || len(ns[len(ns)-1].Links) == 0 {
		h.t.Fatal("no notice with a link was queued")
	}
	return strings.TrimPrefix(ns[len(ns)-1].Links[0].URL, "http://feedmail.test")
}

// signup posts the signup form and expects the "check your inbox" page.
func (h *harness) signup(email, feedURL, delivery string) {
	h.t.Helper()
	w := h.post("/subscriptions", url.Values{"email": {email}, "url": {feedURL}, "delivery": {delivery}, "zone": {"Europe/Berlin"}})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Check your inbox") {
		h.t.Fatalf("signup %s %s: %d\n%s", email, feedURL, w.Code, w.Body.String())
	}
}

// subscribeConfirmed signs up and confirms; it returns the user.
func (h *harness) subscribeConfirmed(email, feedURL, delivery string) *store.User {
	h.t.Helper()
	h.signup(email, feedURL, delivery)
	if w := h.post(h.lastLink(), nil); w.Code != http.StatusOK {
		h.t.Fatalf("confirm: %d\n%s", w.Code, w.Body.String())
	}
	u, err := h.st.UserByEmail(context.Background(), email)
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

func (h *harness) subsOf(u *store.User) []store.SubscriptionView {
	h.t.Helper()
	subs, err := h.st.SubscriptionsOfUser(context.Background(), u.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return subs
}

var errorPara = regexp.MustCompile(`<p class="error" id="([a-z0-9-]+)-error">.*?</span>([^<]*)</p>`)

// fieldErrors maps field ids to the inline errors shown next to them.
func fieldErrors(body string) map[string]string {
	out := map[string]string{}
	for _, m := range errorPara.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// testLog sends the server's warnings and errors to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
