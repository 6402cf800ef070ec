package hubtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/websub"
)

func TestParseSubscription(t *testing.T) {
	o := Options{}
	o.fill()
	tests := []struct {
		name      string
		form      url.Values
		wantErr   bool
		wantLease time.Duration
	}{
		{"lease asked", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}, "hub.lease_seconds": {"3600"}}, false, time.Hour},
		{"no lease: default", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}}, false, 10 * 24 * time.Hour},
		{"lease capped", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}, "hub.lease_seconds": {"99999999"}}, false, 30 * 24 * time.Hour},
		{"bad lease", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}, "hub.lease_seconds": {"-1"}}, true, 0},
		{"no topic", url.Values{"hub.mode": {"subscribe"}, "hub.callback": {"http://s/cb"}}, true, 0},
		{"callback not http", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"ftp://s/cb"}}, true, 0},
		{"secret too long", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}, "hub.secret": {strings.Repeat("x", 200)}}, true, 0},
		{"unsubscribe: no lease", url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {"http://f/1"}, "hub.callback": {"http://s/cb"}}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := parseSubscription(tt.form, o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && req.lease != tt.wantLease {
				t.Errorf("lease = %v, want %v", req.lease, tt.wantLease)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	h := &Hub{o: Options{FirstBackoff: time.Second, MaxBackoff: 30 * time.Second}}
	tests := []struct {
		try  int
		want time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {4, 16 * time.Second}, {5, 30 * time.Second}, {1000, 30 * time.Second}}
	for _, tt := range tests {
		if got := h.backoff(tt.try); got != tt.want {
			t.Errorf("backoff(%d) = %v, want %v", tt.try, got, tt.want)
		}
	}
}

// subscriber is a minimal WebSub subscriber: it echoes challenges, checks
// signatures and records the bodies it took; fail answers 500 to the
// first n distributions.
type subscriber struct {
	secret string
	mu     sync.Mutex
	fail   int
	bodies []string
	bad    int // distributions with a bad signature
}

func (s *subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		_, _ = io.WriteString(w, r.URL.Query().Get("hub.challenge"))
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if websub.VerifySignature([]byte(s.secret), r.Header.Get(websub.SignatureHeader), body) != nil {
		s.bad++
	}
	s.bodies = append(s.bodies, string(body))
	w.WriteHeader(http.StatusAccepted)
}

func (s *subscriber) got() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...), s.bad
}

// subscribe asks hub to subscribe callback to topic and waits, with a
// generous deadline, until the hub counts the verification.
func subscribe(t *testing.T, h *Hub, topic, callback, secret, lease string) {
	t.Helper()
	form := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {callback}, "hub.secret": {secret}}
	if lease != "" {
		form.Set("hub.lease_seconds", lease)
	}
	resp, err := http.PostForm(h.URL(), form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("subscribe answered %d, want 202", resp.StatusCode)
	}
	waitCounts(t, h, func(c Counts) bool { return c.Verified+c.Unverified >= 1 })
}

func waitCounts(t *testing.T, h *Hub, ok func(Counts) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := h.Counts()
		if ok(c) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub counts never reached the condition: %+v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		fail       int     // the subscriber's first answers that are 500
		resend     float64 // Options.Resend
		lease      string
		advance    time.Duration // clock moved after subscribing
		wantBodies int
		wantCounts Counts
	}{
		{"delivered once", 0, 0, "3600", 0, 1, Counts{Verified: 1, Publishes: 1, Fetches: 1, Delivered: 1, Subscriptions: 1}},
		{"retried after 500s", 2, 0, "3600", 0, 1, Counts{Verified: 1, Publishes: 1, Fetches: 1, Delivered: 1, Retries: 2, Subscriptions: 1}},
		{"resent after a lost answer", 0, 1, "3600", 0, 2, Counts{Verified: 1, Publishes: 1, Fetches: 1, Delivered: 1, Resent: 1, Subscriptions: 1}},
		{"lease ran out", 0, 0, "60", 2 * time.Minute, 0, Counts{Verified: 1, Publishes: 1, Fetches: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/atom+xml")
				_, _ = io.WriteString(w, "<feed>post 1</feed>")
			}))
			defer feed.Close()
			s := &subscriber{secret: "s3cret", fail: tt.fail}
			cb := httptest.NewServer(s)
			defer cb.Close()
			clk := clock.NewFake(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			h, err := Start("127.0.0.1:0", Options{Clock: clk, FirstBackoff: 10 * time.Millisecond, Resend: tt.resend, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			subscribe(t, h, feed.URL, cb.URL+"/cb?x=1", s.secret, tt.lease)
			clk.Advance(tt.advance)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := Publish(ctx, http.DefaultClient, h.URL(), feed.URL); err != nil {
				t.Fatal(err)
			}
			if err := h.Wait(ctx); err != nil {
				t.Fatalf("hub still busy: %v; counts %+v", err, h.Counts())
			}
			bodies, bad := s.got()
			if len(bodies) != tt.wantBodies || bad != 0 {
				t.Errorf("subscriber took %d bodies (%d badly signed), want %d well signed", len(bodies), bad, tt.wantBodies)
			}
			for _, b := range bodies {
				if b != "<feed>post 1</feed>" {
					t.Errorf("body %q, want the topic's", b)
				}
			}
			tt.wantCounts.Requests = 1
			if got := h.Counts(); got != tt.wantCounts {
				t.Errorf("counts %+v, want %+v", got, tt.wantCounts)
			}
		})
	}
}

func TestUnsubscribeAndBadPublish(t *testing.T) {
	s := &subscriber{secret: "k"}
	cb := httptest.NewServer(s)
	defer cb.Close()
	h, err := Start("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	subscribe(t, h, "http://127.0.0.1:1/f", cb.URL, "k", "")
	resp, err := http.PostForm(h.URL(), url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {"http://127.0.0.1:1/f"}, "hub.callback": {cb.URL}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitCounts(t, h, func(c Counts) bool { return c.Verified == 2 })
	if c := h.Counts(); c.Subscriptions != 0 {
		t.Errorf("after unsubscribe: %d subscriptions, want 0", c.Subscriptions)
	}
	for _, form := range []url.Values{{"hub.mode": {"publish"}}, {"hub.mode": {"nonsense"}}} {
		resp, err := http.PostForm(h.URL(), form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%v answered %d, want 400", form, resp.StatusCode)
		}
	}
}
