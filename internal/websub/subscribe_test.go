package websub

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

const (
	testHub      = "https://hub.example/"
	testTopic    = "https://example.com/feed"
	testCallback = "https://feedmail.example/websub/tok123"
)

func TestSubscribeRequest(t *testing.T) {
	tests := []struct {
		name     string
		hub      string
		topic    string
		callback string
		secret   string
		lease    time.Duration
		mode     string
		want     url.Values // nil with wantErr
		wantErr  error
	}{
		{name: "subscribe with secret and lease", hub: testHub, topic: testTopic, callback: testCallback, secret: "sekrit", lease: 10 * 24 * time.Hour, mode: ModeSubscribe,
			want: url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.callback": {testCallback}, "hub.secret": {"sekrit"}, "hub.lease_seconds": {"864000"}}},
		{name: "subscribe plain", hub: testHub, topic: testTopic, callback: testCallback, mode: ModeSubscribe,
			want: url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.callback": {testCallback}}},
		{name: "sub-second lease dropped", hub: testHub, topic: testTopic, callback: testCallback, lease: 500 * time.Millisecond, mode: ModeSubscribe,
			want: url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.callback": {testCallback}}},
		{name: "unsubscribe sends no secret or lease", hub: testHub, topic: testTopic, callback: testCallback, secret: "sekrit", lease: time.Hour, mode: ModeUnsubscribe,
			want: url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {testTopic}, "hub.callback": {testCallback}}},
		{name: "topic with query survives encoding", hub: testHub, topic: "https://example.com/feed?a=1&b=2", callback: testCallback, mode: ModeSubscribe,
			want: url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"https://example.com/feed?a=1&b=2"}, "hub.callback": {testCallback}}},
		{name: "secret of 199 bytes", hub: testHub, topic: testTopic, callback: testCallback, secret: strings.Repeat("s", 199), mode: ModeSubscribe,
			want: url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.callback": {testCallback}, "hub.secret": {strings.Repeat("s", 199)}}},

		{name: "secret of 200 bytes", hub: testHub, topic: testTopic, callback: testCallback, secret: strings.Repeat("s", 200), mode: ModeSubscribe, wantErr: ErrBadRequest},
		{name: "bad mode", hub: testHub, topic: testTopic, callback: testCallback, mode: "denied", wantErr: ErrBadRequest},
		{name: "empty mode", hub: testHub, topic: testTopic, callback: testCallback, wantErr: ErrBadRequest},
		{name: "relative hub", hub: "/hub", topic: testTopic, callback: testCallback, mode: ModeSubscribe, wantErr: ErrBadRequest},
		{name: "ftp topic", hub: testHub, topic: "ftp://example.com/feed", callback: testCallback, mode: ModeSubscribe, wantErr: ErrBadRequest},
		{name: "no callback", hub: testHub, topic: testTopic, mode: ModeSubscribe, wantErr: ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := SubscribeRequest(context.Background(), tt.hub, tt.topic, tt.callback, tt.secret, tt.lease, tt.mode)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tt.hub {
				t.Errorf("request %s %s", req.Method, req.URL)
			}
			if ct := req.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type = %q", ct)
			}
			if req.GetBody == nil {
				t.Error("GetBody unset: a 307/308 from the hub could not resend the body")
			}
			body, _ := io.ReadAll(req.Body)
			got, err := url.ParseQuery(string(body))
			if err != nil {
				t.Fatal(err)
			}
			if got.Encode() != tt.want.Encode() {
				t.Errorf("form = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSubscribeThroughHubRedirect models websub.rocks 203/204: the hub
// answers 307 or 308, and the form must arrive intact at the new hub URL.
func TestSubscribeThroughHubRedirect(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var got url.Values
		mux := http.NewServeMux()
		mux.HandleFunc("POST /hub", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/real-hub", code)
		})
		mux.HandleFunc("POST /real-hub", func(w http.ResponseWriter, r *http.Request) {
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got = r.PostForm
			w.WriteHeader(http.StatusAccepted)
		})
		srv := httptest.NewServer(mux)
		req, err := SubscribeRequest(t.Context(), srv.URL+"/hub", testTopic, testCallback, "sekrit", time.Hour, ModeSubscribe)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("%d: status %d, want 202", code, resp.StatusCode)
		}
		if got.Get("hub.mode") != "subscribe" || got.Get("hub.topic") != testTopic || got.Get("hub.callback") != testCallback ||
			got.Get("hub.secret") != "sekrit" || got.Get("hub.lease_seconds") != "3600" {
			t.Errorf("%d: hub received %v", code, got)
		}
	}
}

func TestCheckIntent(t *testing.T) {
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	tests := []struct {
		name          string
		q             url.Values
		mode          string
		wantChallenge string
		wantLease     time.Duration
		wantErr       error
		errHas        string
	}{
		{name: "subscribe", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c1", "hub.lease_seconds", "86400"), mode: ModeSubscribe,
			wantChallenge: "c1", wantLease: 24 * time.Hour},
		{name: "subscribe no lease", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c2"), mode: ModeSubscribe, wantChallenge: "c2"},
		{name: "garbage lease is unknown", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c", "hub.lease_seconds", "soon"), mode: ModeSubscribe, wantChallenge: "c"},
		{name: "negative lease is unknown", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c", "hub.lease_seconds", "-5"), mode: ModeSubscribe, wantChallenge: "c"},
		{name: "huge lease capped", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c", "hub.lease_seconds", "99999999999999999"), mode: ModeSubscribe,
			wantChallenge: "c", wantLease: 10 * 365 * 24 * time.Hour},
		{name: "unsubscribe", q: q("hub.mode", "unsubscribe", "hub.topic", testTopic, "hub.challenge", "c3", "hub.lease_seconds", "100"), mode: ModeUnsubscribe, wantChallenge: "c3"},
		{name: "any mode accepted", q: q("hub.mode", "unsubscribe", "hub.topic", testTopic, "hub.challenge", "c4"), mode: "", wantChallenge: "c4"},
		{name: "challenge kept verbatim", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "a b+c/=&?"), mode: ModeSubscribe, wantChallenge: "a b+c/=&?"},

		// websub.rocks 205: verification for a topic we did not ask for → 404.
		{name: "wrong topic", q: q("hub.mode", "subscribe", "hub.topic", "https://evil.example/feed", "hub.challenge", "c"), mode: ModeSubscribe, wantErr: ErrUnknownTopic},
		{name: "topic differs by trailing slash", q: q("hub.mode", "subscribe", "hub.topic", testTopic+"/", "hub.challenge", "c"), mode: ModeSubscribe, wantErr: ErrUnknownTopic},
		{name: "no topic", q: q("hub.mode", "subscribe", "hub.challenge", "c"), mode: ModeSubscribe, wantErr: ErrUnknownTopic},
		{name: "denied with reason", q: q("hub.mode", "denied", "hub.topic", testTopic, "hub.reason", "topic not allowed"), mode: ModeSubscribe,
			wantErr: ErrDenied, errHas: "topic not allowed"},
		{name: "denied without reason", q: q("hub.mode", "denied", "hub.topic", testTopic), mode: ModeSubscribe, wantErr: ErrDenied},
		{name: "denied for another topic", q: q("hub.mode", "denied", "hub.topic", "https://other.example/"), mode: ModeSubscribe, wantErr: ErrUnknownTopic},
		{name: "unrequested unsubscribe", q: q("hub.mode", "unsubscribe", "hub.topic", testTopic, "hub.challenge", "c"), mode: ModeSubscribe, wantErr: ErrUnexpectedMode},
		{name: "unrequested subscribe", q: q("hub.mode", "subscribe", "hub.topic", testTopic, "hub.challenge", "c"), mode: ModeUnsubscribe, wantErr: ErrUnexpectedMode},
		{name: "unknown mode", q: q("hub.mode", "publish", "hub.topic", testTopic, "hub.challenge", "c"), mode: ModeSubscribe, wantErr: ErrBadVerification},
		{name: "no mode", q: q("hub.topic", testTopic, "hub.challenge", "c"), mode: "", wantErr: ErrBadVerification},
		{name: "no challenge", q: q("hub.mode", "subscribe", "hub.topic", testTopic), mode: ModeSubscribe, wantErr: ErrBadVerification},
		{name: "empty", q: url.Values{}, mode: ModeSubscribe, wantErr: ErrUnknownTopic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			challenge, lease, err := CheckIntent(tt.q, testTopic, tt.mode)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tt.wantErr, tt.errHas)
				}
				if challenge != "" {
					t.Errorf("challenge %q returned with an error", challenge)
				}
				return
			}
			if err != nil || challenge != tt.wantChallenge || lease != tt.wantLease {
				t.Errorf("got %q, %v, %v; want %q, %v", challenge, lease, err, tt.wantChallenge, tt.wantLease)
			}
		})
	}
}

func TestRenewAt(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		lease time.Duration
		want  time.Time
	}{
		{0, at.Add(24 * time.Hour)},
		{-time.Hour, at.Add(24 * time.Hour)},
		{10 * 24 * time.Hour, at.Add(5 * 24 * time.Hour)},
		{time.Hour, at.Add(30 * time.Minute)},
		{2 * time.Minute, at.Add(time.Minute)},
		{10 * time.Second, at.Add(time.Minute)}, // floor
		{7 * 24 * time.Hour, at.Add(84 * time.Hour)},
	}
	for _, tt := range tests {
		if got := RenewAt(at, tt.lease); !got.Equal(tt.want) {
			t.Errorf("RenewAt(lease %v) = %v, want %v", tt.lease, got, tt.want)
		}
	}
}
