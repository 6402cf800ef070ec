// Package websubtest is a fake WebSub hub on an httptest server, for tests of
// a subscriber modelled on the websub.rocks subscriber tests: it accepts
// subscription and unsubscription requests, verifies intent against the
// callback with a random challenge, can deny, can redirect its endpoint
// (307/308), can grant any lease or none (or refuse any asked for),
// publishes content signed with a chosen method (or badly, or not at all),
// can send verifications nobody asked for, and records everything it did.
//
// Test infrastructure: never linked into cmd/feedmail.
// It only calls the callbacks it is given.
package websubtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
	// RefuseLease answers 400 to every subscription request that carries
	// hub.lease_seconds, and treats those without as usual (a hub with a
	// maximum lease that refuses longer ones instead of shortening them;
	// set Lease for what it grants).
	RefuseLease bool
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
