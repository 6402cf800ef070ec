// Package hubtest is a WebSub hub for benchmarks and end-to-end tests: a
// real HTTP server (not an httptest fake) that takes subscription and
// unsubscription requests, verifies intent with a GET challenge, honours
// hub.lease_seconds and hub.secret, and, when a publisher tells it a topic
// changed (hub.mode=publish, hub.url=…), fetches the topic and POSTs it to
// every subscriber signed with X-Hub-Signature (sha256 HMAC), retrying
// failed deliveries (non-2xx, errors, timeouts) with backoff for a while,
// as public hubs do. A seeded share of deliveries can be sent again after
// the subscriber answered, as if the answer had been lost, so that a
// subscriber's handling of a repeated push is exercised.
//
// Test infrastructure: never linked into cmd/feedmail. It owns its
// in-memory subscriptions and counters; it must not read or write any
// feedmail table.
package hubtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// Options set the hub up. Zero values take the defaults.
type Options struct {
	// HTTP makes the hub's requests (verifications, fetches, deliveries);
	// default a client with a 15 s timeout.
	HTTP *http.Client
	// Clock dates subscriptions and their leases; default clock.Real.
	Clock clock.Clock
	// DefaultLease is granted when a subscriber asks none (default 10
	// days); MaxLease caps what is asked (default 30 days).
	DefaultLease, MaxLease time.Duration
	// RetryFor is how long a delivery or a topic fetch is retried before
	// the hub gives up (default 30 min); backoff starts at FirstBackoff
	// (default 1 s), doubles, and is capped at MaxBackoff (default 30 s).
	RetryFor, FirstBackoff, MaxBackoff time.Duration
	// Resend is the share (0–1) of deliveries whose first attempt is
	// treated as failed after the subscriber answered (its answer "lost"),
	// so the same content is sent again; drawn from Seed.
	Resend float64
	Seed   int64
	Log    *slog.Logger
}

// fill applies the defaults.
func (o *Options) fill() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 15 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	def(&o.DefaultLease, 10*24*time.Hour)
	def(&o.MaxLease, 30*24*time.Hour)
	def(&o.RetryFor, 30*time.Minute)
	def(&o.FirstBackoff, time.Second)
	def(&o.MaxBackoff, 30*time.Second)
}

// sub is one verified subscription.
type sub struct {
	callback, secret string
	expires          time.Time
}

// Hub is a running hub. Start one with Start; Close stops it and its
// pending work.
type Hub struct {
	o      Options
	srv    *http.Server
	url    string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wmu    sync.Mutex // guards closed and wg.Add against Close's Wait
	closed bool       // set by Close: no new work starts

	mu     sync.Mutex
	subs   map[string]map[string]sub // topic → callback → subscription
	rnd    *rand.Rand
	counts Counts
}

// Start listens on addr ("127.0.0.1:0" for any port) and serves the hub
// at its root; URL is what feeds advertise.
func Start(addr string, o Options) (*Hub, error) {
	o.fill()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hubtest: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{o: o, url: "http://" + ln.Addr().String() + "/", ctx: ctx, cancel: cancel,
		subs: map[string]map[string]sub{}, rnd: rand.New(rand.NewPCG(uint64(o.Seed), 0x6875622d74657374))}
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// URL is the hub's endpoint.
func (h *Hub) URL() string { return h.url }

// Close stops taking requests, abandons the pending retries and waits for
// the work under way to end.
func (h *Hub) Close() error {
	h.wmu.Lock()
	h.closed = true
	h.wmu.Unlock()
	err := h.srv.Close()
	h.cancel()
	h.wg.Wait()
	return err
}

// Wait blocks until no verification, fetch or delivery is under way or
// waiting to be retried (tests), or ctx ends.
func (h *Hub) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServeHTTP is the hub endpoint: POST with hub.mode subscribe,
// unsubscribe or publish; anything else is 400 (405 for other methods).
// Subscriptions are answered 202 and verified afterwards; publish is 202
// and distributed afterwards.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	switch mode := f.Get("hub.mode"); mode {
	case "subscribe", "unsubscribe":
		req, err := parseSubscription(f, h.o)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.count(func(c *Counts) { c.Requests++ })
		h.goWork(func(ctx context.Context) { h.verify(ctx, req) })
	case "publish":
		topics := append(f["hub.url"], f["hub.topic"]...)
		if len(topics) == 0 {
			http.Error(w, "hub.url missing", http.StatusBadRequest)
			return
		}
		for _, t := range topics {
			h.count(func(c *Counts) { c.Publishes++ })
			h.goWork(func(ctx context.Context) { h.distribute(ctx, t) })
		}
	default:
		http.Error(w, "unknown hub.mode", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// goWork runs fn on its own goroutine under the hub's context; once
// Close has begun it drops fn, so no Add races Close's Wait.
func (h *Hub) goWork(fn func(context.Context)) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.closed {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		fn(h.ctx)
	}()
}

// subRequest is a checked (un)subscription request.
type subRequest struct {
	mode, topic, callback, secret string
	lease                         time.Duration // subscribe only
}

var errBadRequest = errors.New("hubtest: bad request")

// parseSubscription checks an (un)subscription form and returns it with
// the lease the hub grants: the one asked for, capped at MaxLease, or
// DefaultLease when none was asked.
func parseSubscription(f url.Values, o Options) (subRequest, error) {
	req := subRequest{mode: f.Get("hub.mode"), topic: f.Get("hub.topic"), callback: f.Get("hub.callback"), secret: f.Get("hub.secret")}
	cb, err := url.Parse(req.callback)
	switch {
	case req.topic == "" || req.callback == "":
		return req, fmt.Errorf("%w: hub.topic and hub.callback are required", errBadRequest)
	case err != nil || (cb.Scheme != "http" && cb.Scheme != "https") || cb.Host == "":
		return req, fmt.Errorf("%w: hub.callback is not an http(s) URL", errBadRequest)
	case len(req.secret) > 199:
		return req, fmt.Errorf("%w: hub.secret longer than 200 bytes", errBadRequest)
	}
	if req.mode != "subscribe" {
		return req, nil
	}
	req.lease = o.DefaultLease
	if s := f.Get("hub.lease_seconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return req, fmt.Errorf("%w: hub.lease_seconds %q", errBadRequest, s)
		}
		req.lease = min(time.Duration(n)*time.Second, o.MaxLease)
	}
	return req, nil
}

// count changes the counters under the lock.
func (h *Hub) count(fn func(*Counts)) {
	h.mu.Lock()
	fn(&h.counts)
	h.mu.Unlock()
}

// Counts are what the hub did so far.
type Counts struct {
	Requests, Verified, Unverified int // (un)subscription requests; intents confirmed or not
	Publishes                      int // topics notified
	Fetches, FetchRetries          int // topic fetches that worked; failed attempts
	Delivered, Retries, GaveUp     int // deliveries that got a 2xx; failed attempts; abandoned
	Resent                         int // deliveries sent again after a 2xx (Options.Resend)
	Subscriptions                  int // live subscriptions now
}

// Counts returns the counters.
func (h *Hub) Counts() Counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.counts
	now := h.o.Clock.Now()
	for _, byCB := range h.subs {
		for _, s := range byCB {
			if now.Before(s.expires) {
				c.Subscriptions++
			}
		}
	}
	return c
}
