package web_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/internal/websub"
)

var wsT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// wsEnv is a web server with the WebSub callback and ping routes mounted,
// on a fresh store with a fake clock.
type wsEnv struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	st    *store.Store
	m     *metrics.Metrics
	srv   *web.Server
	ts    *httptest.Server
	links links.Links

	mu        sync.Mutex
	pushed    []wsPush
	ingestErr error
	// pollNow, when set, is what PollNow does.
	pollNow web.PollFunc
	polls   []int64
}

type wsPush struct {
	feedID      int64
	body        string
	contentType string
}

type wsOpt func(*web.PingOptions)

func newWSEnv(t *testing.T, opts ...wsOpt) *wsEnv {
	t.Helper()
	e := &wsEnv{t: t, ctx: context.Background(), clk: clock.NewFake(wsT0), m: metrics.New()}
	e.st = storetest.Open(t, storetest.Options{Clock: e.clk})
	signer, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	e.srv = web.New(web.Deps{Store: e.st, Clock: e.clk, Tokens: signer, Metrics: e.m,
		Config: config.Config{BaseURL: "http://feedmail.test", From: "feedmail@example.com"}})
	e.srv.MountWebSub(web.WebSubOptions{Ingest: func(ctx context.Context, feedID int64, body []byte, ct string) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.ingestErr != nil {
			return e.ingestErr
		}
		e.pushed = append(e.pushed, wsPush{feedID, string(body), ct})
		return nil
	}})
	po := web.PingOptions{PollNow: func(ctx context.Context, feedID int64, reason string) error {
		e.mu.Lock()
		e.polls = append(e.polls, feedID)
		fn := e.pollNow
		e.mu.Unlock()
		if fn == nil {
			return errors.New("no poller in this test")
		}
		return fn(ctx, feedID, reason)
	}}
	for _, o := range opts {
		o(&po)
	}
	e.srv.MountPings(po)
	e.ts = httptest.NewServer(e.srv.Handler())
	t.Cleanup(e.ts.Close)
	e.links = links.New(e.ts.URL, signer, "feedmail@example.com")
	return e
}

// feed makes a feed with one confirmed subscriber (or none).
func (e *wsEnv) feed(u string, followed bool) *store.Feed {
	e.t.Helper()
	if followed {
		return storetest.FollowedFeed(e.t, e.st, u)
	}
	f, _, err := e.st.EnsureFeed(e.ctx, u)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.reload(f.ID)
}

func (e *wsEnv) reload(id int64) *store.Feed { return storetest.Feed(e.t, e.st, id) }

// setWebSub puts feed f in a websub state.
func (e *wsEnv) setWebSub(f *store.Feed, state, secret string) *store.Feed {
	e.t.Helper()
	renew := e.clk.Now().Add(time.Hour)
	to := store.WebSubFields{Hub: "https://hub.example/", Topic: f.URL, State: state, Secret: secret, RenewAt: &renew}
	if state == store.WebSubStateNone {
		to = store.WebSubFields{}
	}
	if ok, err := e.st.SetWebSub(e.ctx, f.ID, f.WebSub(), to, time.Time{}, ""); err != nil || !ok {
		e.t.Fatalf("set websub: %v %v", ok, err)
	}
	return e.reload(f.ID)
}

func (e *wsEnv) do(method, target string, body io.Reader, hdr http.Header) (int, string, http.Header) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, target, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (e *wsEnv) pushes() []wsPush {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wsPush(nil), e.pushed...)
}

func counterValue(t *testing.T, m *metrics.Metrics, event string) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.WebSub.WithLabelValues(event).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func verifyQuery(mode, topic, challenge, lease string) string {
	q := url.Values{}
	for k, v := range map[string]string{"hub.mode": mode, "hub.topic": topic, "hub.challenge": challenge, "hub.lease_seconds": lease} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

func TestWebSubVerificationOfIntent(t *testing.T) {
	e := newWSEnv(t)
	otherSigner, _ := token.NewSigner([]byte("another-secret-another-secret!!!"))
	tests := []struct {
		name      string
		state     string
		callback  func(f *store.Feed) string
		mode      string
		topic     func(f *store.Feed) string
		challenge string
		lease     string
		wantCode  int
		wantBody  string
		wantState string
	}{
		{name: "pending subscription verified", state: store.WebSubStatePending, mode: "subscribe", challenge: "c1", lease: "3600",
			wantCode: 200, wantBody: "c1", wantState: store.WebSubStateActive},
		{name: "renewal of an active subscription", state: store.WebSubStateActive, mode: "subscribe", challenge: "c2", lease: "86400",
			wantCode: 200, wantBody: "c2", wantState: store.WebSubStateActive},
		{name: "unsubscription we asked for", state: store.WebSubStateUnsubscribing, mode: "unsubscribe", challenge: "c3",
			wantCode: 200, wantBody: "c3", wantState: store.WebSubStateNone},
		{name: "websub.rocks 205: another topic", state: store.WebSubStatePending, mode: "subscribe", challenge: "c4",
			topic: func(*store.Feed) string { return "https://elsewhere.example/topic" }, wantCode: 404, wantState: store.WebSubStatePending},
		{name: "unsubscribe we did not ask for", state: store.WebSubStateActive, mode: "unsubscribe", challenge: "c5",
			wantCode: 404, wantState: store.WebSubStateActive},
		{name: "subscribe while unsubscribing", state: store.WebSubStateUnsubscribing, mode: "subscribe", challenge: "c6",
			wantCode: 404, wantState: store.WebSubStateUnsubscribing},
		{name: "no subscription requested", state: store.WebSubStateNone, mode: "subscribe", challenge: "c7",
			wantCode: 404, wantState: store.WebSubStateNone},
		{name: "failed request verified late", state: store.WebSubStateFailed, mode: "subscribe", challenge: "c8",
			wantCode: 404, wantState: store.WebSubStateFailed},
		{name: "no challenge", state: store.WebSubStatePending, mode: "subscribe", wantCode: 400, wantState: store.WebSubStatePending},
		{name: "unknown mode", state: store.WebSubStatePending, mode: "publish", challenge: "c9", wantCode: 400, wantState: store.WebSubStatePending},
		{name: "denied", state: store.WebSubStatePending, mode: "denied", wantCode: 200, wantState: store.WebSubStateDenied},
		{name: "denied for another topic", state: store.WebSubStatePending, mode: "denied",
			topic: func(*store.Feed) string { return "https://elsewhere.example/topic" }, wantCode: 404, wantState: store.WebSubStatePending},
		{name: "tampered token", state: store.WebSubStatePending, mode: "subscribe", challenge: "c10",
			callback: func(f *store.Feed) string { return e.links.WebSubCallback(f.ID, f.WebSubSecret) + "x" }, wantCode: 404, wantState: store.WebSubStatePending},
		{name: "token of another install", state: store.WebSubStatePending, mode: "subscribe", challenge: "c11",
			callback: func(f *store.Feed) string {
				return e.ts.URL + "/websub/" + otherSigner.Sign(token.WebSub, f.ID, time.Time{})
			}, wantCode: 404, wantState: store.WebSubStatePending},
		{name: "token for another purpose", state: store.WebSubStatePending, mode: "subscribe", challenge: "c12",
			callback: func(f *store.Feed) string { return e.links.Unsubscribe(f.ID) }, wantCode: 404, wantState: store.WebSubStatePending},
		{name: "unknown feed", state: store.WebSubStatePending, mode: "subscribe", challenge: "c13",
			callback: func(f *store.Feed) string { return e.links.WebSubCallback(f.ID+1000, f.WebSubSecret) }, wantCode: 404, wantState: store.WebSubStatePending},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := e.feed(fmt.Sprintf("https://v%d.example/feed", i), true)
			f = e.setWebSub(f, tt.state, "secret")
			cb := e.links.WebSubCallback(f.ID, f.WebSubSecret)
			if tt.callback != nil {
				cb = tt.callback(f)
			}
			topic := f.URL
			if tt.topic != nil {
				topic = tt.topic(f)
			}
			if strings.Contains(cb, "/unsubscribe/") { // another purpose: same token, websub path
				cb = e.ts.URL + "/websub/" + cb[strings.LastIndex(cb, "/")+1:]
			}
			code, body, hdr := e.do("GET", cb+"?"+verifyQuery(tt.mode, topic, tt.challenge, tt.lease), nil, nil)
			if code != tt.wantCode {
				t.Fatalf("status %d (%q), want %d", code, body, tt.wantCode)
			}
			if tt.wantBody != "" && (body != tt.wantBody || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain")) {
				t.Errorf("body %q (%s), want the challenge %q as text/plain", body, hdr.Get("Content-Type"), tt.wantBody)
			}
			g := e.reload(f.ID)
			if g.WebSubState != tt.wantState {
				t.Errorf("state %q, want %q", g.WebSubState, tt.wantState)
			}
		})
	}
}

func TestWebSubVerificationRecordsLease(t *testing.T) {
	tests := []struct {
		lease       string
		wantRenew   time.Duration
		wantExpires time.Duration
	}{
		{"864000", 5 * 24 * time.Hour, 10 * 24 * time.Hour},
		{"3600", 30 * time.Minute, time.Hour},
		{"60", time.Minute, time.Minute}, // never sooner than a minute
		{"", 24 * time.Hour, 48 * time.Hour},
		{"0", 24 * time.Hour, 48 * time.Hour},
		{"-5", 24 * time.Hour, 48 * time.Hour},
		{"soon", 24 * time.Hour, 48 * time.Hour},
	}
	e := newWSEnv(t)
	for i, tt := range tests {
		t.Run("lease="+tt.lease, func(t *testing.T) {
			f := e.setWebSub(e.feed(fmt.Sprintf("https://lease%d.example/feed", i), true), store.WebSubStatePending, "s")
			code, _, _ := e.do("GET", e.links.WebSubCallback(f.ID, f.WebSubSecret)+"?"+verifyQuery("subscribe", f.URL, "x", tt.lease), nil, nil)
			if code != 200 {
				t.Fatalf("status %d", code)
			}
			g := e.reload(f.ID)
			now := e.clk.Now()
			if g.WebSubRenewAt == nil || !g.WebSubRenewAt.Equal(now.Add(tt.wantRenew)) {
				t.Errorf("renew_at %v, want now+%s", g.WebSubRenewAt, tt.wantRenew)
			}
			if g.WebSubExpiresAt == nil || !g.WebSubExpiresAt.Equal(now.Add(tt.wantExpires)) {
				t.Errorf("expires_at %v, want now+%s", g.WebSubExpiresAt, tt.wantExpires)
			}
			if !store.WebSubActive(g, now) || store.WebSubActive(g, now.Add(tt.wantExpires)) {
				t.Errorf("active now / at expiry wrong")
			}
		})
	}
}

func TestWebSubDenialOfActiveSubscriptionResumesPolling(t *testing.T) {
	e := newWSEnv(t)
	f := e.setWebSub(e.feed("https://denied.example/feed", true), store.WebSubStatePending, "s")
	if code, _, _ := e.do("GET", e.links.WebSubCallback(f.ID, f.WebSubSecret)+"?"+verifyQuery("subscribe", f.URL, "x", "864000"), nil, nil); code != 200 {
		t.Fatal(code)
	}
	// The poller scheduled the weekly backup poll.
	week := e.clk.Now().Add(7 * 24 * time.Hour)
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("next_poll_at", week).Error; err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	q := url.Values{"hub.mode": {"denied"}, "hub.topic": {f.URL}, "hub.reason": {"topic not served here"}}
	if code, _, _ := e.do("GET", e.links.WebSubCallback(f.ID, f.WebSubSecret)+"?"+q.Encode(), nil, nil); code != 200 {
		t.Fatalf("denial answered %d", code)
	}
	g := e.reload(f.ID)
	now := e.clk.Now()
	if g.WebSubState != store.WebSubStateDenied || store.WebSubActive(g, now) {
		t.Fatalf("state %q", g.WebSubState)
	}
	if g.WebSubRenewAt == nil || !g.WebSubRenewAt.Equal(now.Add(7*24*time.Hour)) {
		t.Errorf("retry at %v, want in a week", g.WebSubRenewAt)
	}
	if !g.NextPollAt.Equal(now) {
		t.Errorf("next poll %s, want now (%s): polling resumes", g.NextPollAt, now)
	}
	if got := counterValue(t, e.m, "denied"); got != 1 {
		t.Errorf("denied events %v", got)
	}
}

func TestWebSubContentDistribution(t *testing.T) {
	e := newWSEnv(t)
	const secret = "s3cr3t-s3cr3t"
	body := []byte(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title></feed>`)
	sign := func(method string, key string) string {
		s, err := websub.Sign([]byte(key), method, body)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name       string
		state      string
		secret     string
		sig        string
		body       []byte
		wantCode   int
		wantIngest bool
		event      string
	}{
		{name: "websub.rocks 300 sha1", sig: sign("sha1", secret), wantCode: 202, wantIngest: true, event: "content"},
		{name: "websub.rocks 300 sha256", sig: sign("sha256", secret), wantCode: 202, wantIngest: true, event: "content"},
		{name: "websub.rocks 300 sha384", sig: sign("sha384", secret), wantCode: 202, wantIngest: true, event: "content"},
		{name: "websub.rocks 300 sha512", sig: sign("sha512", secret), wantCode: 202, wantIngest: true, event: "content"},
		{name: "upper-case hex and method", sig: strings.ToUpper(sign("sha256", secret)), wantCode: 202, wantIngest: true, event: "content"},
		{name: "websub.rocks 301 invalid signature", sig: sign("sha256", "wrong key"), wantCode: 202, event: "bad_signature"},
		{name: "websub.rocks 302 no signature", sig: "", wantCode: 202, event: "bad_signature"},
		{name: "unknown method", sig: "md5=0123456789abcdef0123456789abcdef", wantCode: 202, event: "bad_signature"},
		{name: "malformed", sig: "sha256", wantCode: 202, event: "bad_signature"},
		{name: "signature of another body", sig: sign("sha256", secret), body: append([]byte(" "), body...), wantCode: 202, event: "bad_signature"},
		{name: "after the subscription ended", state: store.WebSubStateNone, sig: sign("sha256", secret), wantCode: 410, event: "content_unwanted"},
		{name: "denied subscription still signed right", state: store.WebSubStateDenied, sig: sign("sha256", secret), wantCode: 202, wantIngest: true, event: "content"},
		{name: "too large", sig: sign("sha256", secret), body: bytes.Repeat([]byte("x"), web.MaxWebSubBody+1), wantCode: 413, event: "content_too_large"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := tt.state
			if state == "" && tt.name != "after the subscription ended" {
				state = store.WebSubStateActive
			}
			f := e.setWebSub(e.feed(fmt.Sprintf("https://d%d.example/feed", i), true), state, secret)
			b := body
			if tt.body != nil {
				b = tt.body
			}
			hdr := http.Header{"Content-Type": {"application/atom+xml"}}
			if tt.sig != "" {
				hdr.Set("X-Hub-Signature", tt.sig)
			}
			before := len(e.pushes())
			beforeEvent := counterValue(t, e.m, tt.event)
			code, _, _ := e.do("POST", e.links.WebSubCallback(f.ID, f.WebSubSecret), bytes.NewReader(b), hdr)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d", code, tt.wantCode)
			}
			got := e.pushes()[before:]
			if tt.wantIngest {
				if len(got) != 1 || got[0].feedID != f.ID || got[0].body != string(b) || got[0].contentType != "application/atom+xml" {
					t.Fatalf("ingested %+v, want the body once for feed %d", got, f.ID)
				}
			} else if len(got) != 0 {
				t.Fatalf("ingested %d pushes, want none", len(got))
			}
			if d := counterValue(t, e.m, tt.event) - beforeEvent; d != 1 {
				t.Errorf("event %s counted %v times", tt.event, d)
			}
		})
	}
}

func TestWebSubContentIngestFailure(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
	}{
		{"database down: the hub should retry", errors.New("database is down"), 500},
		{"not a feed: dropped", fmt.Errorf("%w: html page", web.ErrUnusableContent), 202},
	}
	e := newWSEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := e.setWebSub(e.feed(fmt.Sprintf("https://fail%d.example/feed", i), true), store.WebSubStateActive, "k")
			e.mu.Lock()
			e.ingestErr = tt.err
			e.mu.Unlock()
			sig, _ := websub.Sign([]byte("k"), "sha256", []byte("<rss/>"))
			code, _, _ := e.do("POST", e.links.WebSubCallback(f.ID, f.WebSubSecret), strings.NewReader("<rss/>"), http.Header{"X-Hub-Signature": {sig}})
			if code != tt.wantCode {
				t.Errorf("status %d, want %d", code, tt.wantCode)
			}
		})
	}
}
