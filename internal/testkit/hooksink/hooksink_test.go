package hooksink_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/testkit/hooksink"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// hooks collects what Observe is given.
type hooks struct {
	mu  sync.Mutex
	got []hooksink.Hook
}

func (h *hooks) add(k hooksink.Hook) {
	h.mu.Lock()
	h.got = append(h.got, k)
	h.mu.Unlock()
}

func (h *hooks) list() []hooksink.Hook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hooksink.Hook(nil), h.got...)
}

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deliver sends one post through feedmail's webhook channel, as the
// outbox does, and returns the rendered request and the channel's error.
func deliver(t *testing.T, hc *http.Client, url, secret, id string, at time.Time) (*channel.Request, error) {
	t.Helper()
	r := render(t, url, secret, id, at)
	return r, webhook.New().Deliver(context.Background(), hc, r)
}

// render makes the signed request of one post.
func render(t *testing.T, url, secret, id string, at time.Time) *channel.Request {
	t.Helper()
	r, err := webhook.New().Render(channel.Delivery{ID: id, At: at, Target: channel.Target{URL: url, Secret: secret},
		Post: &channel.Post{Title: "Post " + id, Link: "https://blog.example.org/" + id}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFaultsOff: every delivery is accepted once, observed with its
// webhook-id, path and body, and counted.
func TestFaultsOff(t *testing.T) {
	var got hooks
	secret := newSecret(t)
	s := hooksink.StartT(t, hooksink.Options{Secret: secret, Observe: got.add})
	hc := &http.Client{Timeout: 10 * time.Second}
	began := time.Now()
	var sent []*channel.Request
	for i := range 20 {
		r, err := deliver(t, hc, s.URL()+"/hook", secret, "feedmail-"+strconv.Itoa(i), time.Now())
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		sent = append(sent, r)
	}
	if c := s.Counts(); c != (hooksink.Counts{Accepted: 20}) {
		t.Errorf("Counts = %+v, want 20 accepted", c)
	}
	list := got.list()
	if len(list) != len(sent) {
		t.Fatalf("observed %d hooks, want %d", len(list), len(sent))
	}
	for i, h := range list {
		if h.ID != sent[i].Header.Get("webhook-id") || h.Path != "/hook" || !bytes.Equal(h.Body, sent[i].Body) || h.At.Before(began) {
			t.Errorf("hook %d = id %q path %q at %v body %s; sent id %q body %s", i, h.ID, h.Path, h.At, h.Body,
				sent[i].Header.Get("webhook-id"), sent[i].Body)
		}
	}
}

// TestFaultsSeenBySender: each fault, and each bad signature, is what the
// webhook channel sees and judges as it should, and is counted; none is
// observed.
func TestFaultsSeenBySender(t *testing.T) {
	secret, other := newSecret(t), newSecret(t)
	tests := []struct {
		name       string
		opts       hooksink.Options
		sendSecret string
		at         time.Duration // the delivery's time, from now
		timeout    time.Duration // the sender's client timeout; 0: none
		wantStatus int           // the HTTP error's status; 0: none
		wantAction channel.Action
		wantErr    bool
		want       hooksink.Counts
		minElapsed time.Duration
	}{
		{name: "500", opts: hooksink.Options{Fail500: 1}, wantErr: true, wantStatus: 500,
			wantAction: channel.Retry, want: hooksink.Counts{Failed500: 1}},
		{name: "timeout, the sender gives up", opts: hooksink.Options{Timeout: 1}, timeout: 200 * time.Millisecond,
			wantErr: true, wantAction: channel.Retry, want: hooksink.Counts{TimedOut: 1}, minElapsed: 200 * time.Millisecond},
		{name: "timeout, the receiver cuts off", opts: hooksink.Options{Timeout: 1, TimeoutBy: 150 * time.Millisecond},
			wantErr: true, wantAction: channel.Retry, want: hooksink.Counts{TimedOut: 1}, minElapsed: 150 * time.Millisecond},
		{name: "wrong secret", opts: hooksink.Options{Secret: secret}, sendSecret: other, wantErr: true, wantStatus: 401,
			wantAction: channel.Refused, want: hooksink.Counts{BadSignature: 1}},
		{name: "old timestamp", opts: hooksink.Options{Secret: secret}, at: -10 * time.Minute, wantErr: true, wantStatus: 401,
			wantAction: channel.Refused, want: hooksink.Counts{BadSignature: 1}},
		{name: "old timestamp ignored", opts: hooksink.Options{Secret: secret, IgnoreTimestamp: true}, at: -10 * time.Minute,
			want: hooksink.Counts{Accepted: 1}},
		{name: "no secret to check", sendSecret: other, want: hooksink.Counts{Accepted: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got hooks
			tc.opts.Observe = got.add
			s := hooksink.StartT(t, tc.opts)
			send := tc.sendSecret
			if send == "" {
				send = secret
			}
			began := time.Now()
			_, err := deliver(t, &http.Client{Timeout: tc.timeout}, s.URL()+"/in", send, "feedmail-1", time.Now().Add(tc.at))
			elapsed := time.Since(began)
			checkErr(t, err, tc.wantErr, tc.wantStatus, tc.wantAction)
			if elapsed < tc.minElapsed {
				t.Errorf("answered after %s, want at least %s", elapsed, tc.minElapsed)
			}
			if c := s.Counts(); c != tc.want {
				t.Errorf("Counts = %+v, want %+v", c, tc.want)
			}
			if n := len(got.list()); int64(n) != tc.want.Accepted {
				t.Errorf("observed %d hooks, want %d", n, tc.want.Accepted)
			}
		})
	}
}

// checkErr checks the channel's error: none, or one with the HTTP status
// (0: no answer) that the channel judges as action.
func checkErr(t *testing.T, err error, wantErr bool, status int, action channel.Action) {
	t.Helper()
	if !wantErr {
		if err != nil {
			t.Fatalf("delivery: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatal("delivery succeeded, want an error")
	}
	var he *channel.HTTPError
	gotStatus := 0
	if errors.As(err, &he) {
		gotStatus = he.Status
	}
	if gotStatus != status {
		t.Errorf("error %v: status %d, want %d", err, gotStatus, status)
	}
	if v := webhook.New().Judge(err); v.Action != action {
		t.Errorf("error %v judged %v, want %v", err, v.Action, action)
	}
}

// TestFaultShares: over many deliveries, what the sender saw, the counts
// and Observe agree, and each share is near its setting.
func TestFaultShares(t *testing.T) {
	const n = 2000
	var got hooks
	secret := newSecret(t)
	s := hooksink.StartT(t, hooksink.Options{Seed: 5, Fail500: 0.05, Timeout: 0.05, TimeoutBy: time.Millisecond,
		Secret: secret, Observe: got.add})
	hc := &http.Client{Timeout: 10 * time.Second}
	var ok, got500, cut int
	for i := range n {
		_, err := deliver(t, hc, s.URL()+"/hook", secret, "feedmail-"+strconv.Itoa(i), time.Now())
		var he *channel.HTTPError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &he) && he.Status == 500:
			got500++
		case errors.As(err, &he):
			t.Fatalf("delivery %d: %v", i, err)
		default:
			cut++
		}
	}
	c := s.Counts()
	if c != (hooksink.Counts{Accepted: int64(ok), Failed500: int64(got500), TimedOut: int64(cut)}) || len(got.list()) != ok {
		t.Errorf("sender saw %d ok, %d 500, %d cut off; Counts %+v; observed %d", ok, got500, cut, c, len(got.list()))
	}
	for _, x := range []struct {
		name string
		got  int
	}{{"500", got500}, {"timeout", cut}} {
		want := 0.05 * n
		if tol := 5 * math.Sqrt(want); math.Abs(float64(x.got)-want) > tol {
			t.Errorf("%s: %d of %d, want %.0f ± %.0f", x.name, x.got, n, want, tol)
		}
	}
}

func TestStartRefuses(t *testing.T) {
	for _, o := range []hooksink.Options{
		{Fail500: -0.1},
		{Timeout: 1.1},
		{Fail500: 0.6, Timeout: 0.5},
		{TimeoutBy: -time.Second},
		{Secret: "whsec_not base64!"},
	} {
		if s, err := hooksink.Start(o); err == nil {
			_ = s.Close()
			t.Errorf("Start(%+v) accepted", o)
		}
	}
}

// TestCloseEndsHangs: Close does not wait out TimeoutBy.
func TestCloseEndsHangs(t *testing.T) {
	s, err := hooksink.Start(hooksink.Options{Timeout: 1, TimeoutBy: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := render(t, s.URL(), newSecret(t), "feedmail-1", time.Now())
	done := make(chan error, 1)
	go func() { done <- webhook.New().Deliver(context.Background(), &http.Client{}, r) }()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.Counts().TimedOut == 1 }, "the request never arrived")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the hang")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the hung delivery succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hung delivery still waits after Close")
	}
}

// TestClientGoneIsObservedAsReplyLost: a hook taken in full from a client
// that has hung up is observed with ReplyLost and counted as ClientGone,
// not Accepted, and gets no answer.
func TestClientGoneIsObservedAsReplyLost(t *testing.T) {
	var h hooks
	s, err := hooksink.Start(hooksink.Options{Observe: h.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, gone := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		if gone {
			cancel()
		}
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/h/1", strings.NewReader(`{"link":"https://blog.example.org/1"}`))
		req.Header.Set("webhook-id", "feedmail-"+strconv.FormatBool(gone))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		cancel()
		if wrote := w.Body.Len() > 0; wrote == gone {
			t.Errorf("client gone %v: answer written %v (%q)", gone, wrote, w.Body.String())
		}
	}
	got := h.list()
	if len(got) != 2 || got[0].ReplyLost || !got[1].ReplyLost {
		t.Fatalf("observed %+v, want the first with its reply, the second with ReplyLost", got)
	}
	if c := s.Counts(); c.Accepted != 1 || c.ClientGone != 1 {
		t.Errorf("counts %+v, want 1 accepted and 1 client gone", c)
	}
}
