// Package websubtest is a fake WebSub hub on an httptest server, for tests of
// a subscriber modelled on the websub.rocks subscriber tests: it accepts
// subscription and unsubscription requests, verifies intent against the
// callback with a random challenge, can deny, can redirect its endpoint
// (307/308), can grant any lease or none, publishes content signed with a
// chosen method (or badly, or not at all), can send verifications nobody
// asked for, and records everything it did.
package websubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/websub"
)

// Options set how the hub behaves. They can be changed while it runs
// (SetOptions); the zero value is a well-behaved hub that verifies before
// it answers 202 and grants the lease asked for.
type Options struct {
	// Redirect, when 307 or 308 (or any 3xx), answers requests to the
	// advertised endpoint (URL) with that status and a Location pointing at
	// the real endpoint (websub.rocks 203, 204).
	Redirect int
	// Status, when non-zero, answers every (un)subscription request with it
	// and does nothing else (a hub that refuses: 400, 500...).
	Status int
	// Deny answers 202 and then, instead of verifying, tells the callback
	// hub.mode=denied with DenyReason.
	Deny       bool
	DenyReason string
	// Async answers 202 first and verifies afterwards, as most hubs do; the
	// default verifies before answering, so that verification is complete
	// when the subscriber's request returns. Wait for async work with
	// Hub.Wait.
	Async bool
	// Lease is the lease granted: 0 grants what was asked (or 10 days when
	// nothing was asked); negative sends no hub.lease_seconds at all.
	Lease time.Duration
	// NoVerify accepts requests (202) and never verifies them.
	NoVerify bool
}

// Request is one (un)subscription request the hub received.
type Request struct {
	Path         string // the path it arrived at (shows redirects)
	Mode         string
	Topic        string
	Callback     string
	Secret       string
	LeaseSeconds string // as sent; "" when absent
	ContentType  string
	UserAgent    string
	Status       int // what the hub answered
}

// Verification is one verification of intent (or denial) the hub sent.
type Verification struct {
	Mode      string
	Topic     string
	Callback  string
	Challenge string
	Lease     int64 // hub.lease_seconds sent; 0 when none
	Status    int   // the callback's answer; 0 when it could not be reached
	Body      string
	// Confirmed: a 2xx answer echoing the challenge exactly.
	Confirmed bool
	Err       error
}

// Subscription is an active subscription at the hub.
type Subscription struct {
	Topic    string
	Callback string
	Secret   string
	Lease    time.Duration // 0: no lease given
	Since    time.Time
}

// Delivery is one content distribution the hub sent.
type Delivery struct {
	Topic     string
	Callback  string
	Signature string // X-Hub-Signature sent; "" when none
	Status    int
	Err       error
}

// Signing says how Publish signs content.
type Signing struct {
	// Method is sha1, sha256, sha384 or sha512; "" means sha256.
	Method string
	// None sends no X-Hub-Signature at all (websub.rocks 302).
	None bool
	// Bad sends a well-formed signature under the wrong key (websub.rocks 301).
	Bad bool
}

// Hub is a running fake hub. Make one with New; it closes at test cleanup.
type Hub struct {
	// URL is the hub endpoint to advertise (rel="hub").
	URL string

	srv    *httptest.Server
	client *http.Client
	wg     sync.WaitGroup

	mu            sync.Mutex
	opts          Options
	requests      []Request
	verifications []Verification
	deliveries    []Delivery
	subs          map[[2]string]Subscription // (topic, callback)
}

// New starts a hub on a loopback httptest server.
func New(t testing.TB, opts Options) *Hub {
	t.Helper()
	h := &Hub{opts: opts, subs: map[[2]string]Subscription{},
		client: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}}
	mux := http.NewServeMux()
	mux.HandleFunc("/hub", h.endpoint(true))
	mux.HandleFunc("/hub/real", h.endpoint(false))
	h.srv = httptest.NewServer(mux)
	h.URL = h.srv.URL + "/hub"
	t.Cleanup(h.Close)
	return h
}

// Close stops the hub after its pending verifications.
func (h *Hub) Close() {
	h.wg.Wait()
	h.srv.Close()
}

// Wait blocks until the verifications started asynchronously are done.
func (h *Hub) Wait() { h.wg.Wait() }

// SetOptions changes the hub's behaviour from now on.
func (h *Hub) SetOptions(o Options) {
	h.mu.Lock()
	h.opts = o
	h.mu.Unlock()
}

// Requests returns the (un)subscription requests received so far.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// Verifications returns the verifications of intent and denials sent so far.
func (h *Hub) Verifications() []Verification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.verifications)
}

// Deliveries returns the content distributions sent so far.
func (h *Hub) Deliveries() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.deliveries)
}

// Subscriptions returns the verified subscriptions, by topic then callback.
func (h *Hub) Subscriptions() []Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Subscription
	for _, s := range h.subs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Subscription) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return strings.Compare(a.Callback, b.Callback)
	})
	return out
}

func (h *Hub) endpoint(advertised bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		o := h.opts
		h.mu.Unlock()
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if advertised && o.Redirect != 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Location", h.srv.URL+"/hub/real")
			w.WriteHeader(o.Redirect)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		req := Request{Path: r.URL.Path, Mode: r.PostForm.Get("hub.mode"), Topic: r.PostForm.Get("hub.topic"),
			Callback: r.PostForm.Get("hub.callback"), Secret: r.PostForm.Get("hub.secret"),
			LeaseSeconds: r.PostForm.Get("hub.lease_seconds"), ContentType: r.Header.Get("Content-Type"),
			UserAgent: r.Header.Get("User-Agent")}
		status := http.StatusAccepted
		switch {
		case o.Status != 0:
			status = o.Status
		case req.Mode != websub.ModeSubscribe && req.Mode != websub.ModeUnsubscribe:
			status = http.StatusBadRequest
		case req.Topic == "" || req.Callback == "":
			status = http.StatusBadRequest
		}
		req.Status = status
		h.mu.Lock()
		h.requests = append(h.requests, req)
		h.mu.Unlock()
		if status != http.StatusAccepted || o.NoVerify {
			w.WriteHeader(status)
			return
		}
		work := func(ctx context.Context) {
			switch {
			case o.Deny && req.Mode == websub.ModeSubscribe:
				h.deny(ctx, req.Callback, req.Topic, o.DenyReason)
			default:
				h.verify(ctx, req, o)
			}
		}
		if o.Async {
			h.wg.Add(1)
			w.WriteHeader(status)
			go func() {
				defer h.wg.Done()
				work(context.Background())
			}()
			return
		}
		work(r.Context())
		w.WriteHeader(status)
	}
}

// leaseFor is the lease the hub grants for a request.
func leaseFor(req Request, o Options) time.Duration {
	switch {
	case o.Lease < 0:
		return 0
	case o.Lease > 0:
		return o.Lease
	}
	if s, err := strconv.ParseInt(req.LeaseSeconds, 10, 64); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 10 * 24 * time.Hour
}

func (h *Hub) verify(ctx context.Context, req Request, o Options) {
	lease := time.Duration(0)
	if req.Mode == websub.ModeSubscribe {
		lease = leaseFor(req, o)
	}
	v := h.Verify(ctx, req.Callback, req.Mode, req.Topic, lease)
	if !v.Confirmed {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	key := [2]string{req.Topic, req.Callback}
	if req.Mode == websub.ModeUnsubscribe {
		delete(h.subs, key)
		return
	}
	h.subs[key] = Subscription{Topic: req.Topic, Callback: req.Callback, Secret: req.Secret, Lease: lease, Since: time.Now()}
}

// Verify sends a verification of intent to callback for mode and topic with
// a fresh challenge (and hub.lease_seconds when lease > 0), records it and
// returns it. Tests call it directly to send a verification nobody asked
// for (websub.rocks 205: an unknown topic must be answered 404).
func (h *Hub) Verify(ctx context.Context, callback, mode, topic string, lease time.Duration) Verification {
	challenge := randomHex(16)
	q := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {challenge}}
	if lease > 0 {
		q.Set("hub.lease_seconds", strconv.FormatInt(int64(lease/time.Second), 10))
	}
	v := Verification{Mode: mode, Topic: topic, Callback: callback, Challenge: challenge, Lease: int64(lease / time.Second)}
	v.Status, v.Body, v.Err = h.get(ctx, callback, q)
	v.Confirmed = v.Status/100 == 2 && v.Body == challenge
	h.mu.Lock()
	h.verifications = append(h.verifications, v)
	h.mu.Unlock()
	return v
}

// Deny sends hub.mode=denied for topic to callback, records it and returns
// the callback's answer.
func (h *Hub) Deny(ctx context.Context, callback, topic, reason string) Verification {
	return h.deny(ctx, callback, topic, reason)
}

func (h *Hub) deny(ctx context.Context, callback, topic, reason string) Verification {
	q := url.Values{"hub.mode": {websub.ModeDenied}, "hub.topic": {topic}}
	if reason != "" {
		q.Set("hub.reason", reason)
	}
	v := Verification{Mode: websub.ModeDenied, Topic: topic, Callback: callback}
	v.Status, v.Body, v.Err = h.get(ctx, callback, q)
	v.Confirmed = v.Status/100 == 2
	h.mu.Lock()
	delete(h.subs, [2]string{topic, callback})
	h.verifications = append(h.verifications, v)
	h.mu.Unlock()
	return v
}

func (h *Hub) get(ctx context.Context, callback string, q url.Values) (int, string, error) {
	u, err := url.Parse(callback)
	if err != nil {
		return 0, "", err
	}
	// Keep the callback's own query, add ours (WebSub §5.3).
	cq := u.Query()
	for k, vs := range q {
		cq[k] = vs
	}
	u.RawQuery = cq.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// Publish distributes body (of contentType) to every verified subscriber of
// topic, signed as sig says, with the Link headers WebSub §7 asks for, and
// returns the deliveries (also recorded).
func (h *Hub) Publish(ctx context.Context, topic string, body []byte, contentType string, sig Signing) []Delivery {
	var targets []Subscription
	for _, s := range h.Subscriptions() {
		if s.Topic == topic {
			targets = append(targets, s)
		}
	}
	var out []Delivery
	for _, s := range targets {
		d := h.PublishTo(ctx, s.Callback, s.Secret, topic, body, contentType, sig)
		out = append(out, d)
	}
	return out
}

// PublishTo distributes body to one callback, signed with secret as sig
// says, whether or not it subscribed; recorded like Publish.
func (h *Hub) PublishTo(ctx context.Context, callback, secret, topic string, body []byte, contentType string, sig Signing) Delivery {
	d := Delivery{Topic: topic, Callback: callback}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, callback, strings.NewReader(string(body)))
	if err != nil {
		d.Err = err
		return h.record(d)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Add("Link", fmt.Sprintf(`<%s>; rel="hub"`, h.URL))
	req.Header.Add("Link", fmt.Sprintf(`<%s>; rel="self"`, topic))
	if !sig.None {
		method := sig.Method
		if method == "" {
			method = "sha256"
		}
		key := []byte(secret)
		if sig.Bad {
			key = []byte("not-the-secret-" + secret)
		}
		s, err := websub.Sign(key, method, body)
		if err != nil {
			d.Err = err
			return h.record(d)
		}
		d.Signature = s
		req.Header.Set(websub.SignatureHeader, s)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		d.Err = err
		return h.record(d)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d.Status = resp.StatusCode
	return h.record(d)
}

func (h *Hub) record(d Delivery) Delivery {
	h.mu.Lock()
	h.deliveries = append(h.deliveries, d)
	h.mu.Unlock()
	return d
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
