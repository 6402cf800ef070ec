package websubtest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/hubwire"
	"github.com/feedmail/feedmail/internal/websub"
)

// endpoint returns the hub's (un)subscription handler: it records the
// request, answers it as Options say and verifies intent (or denies), in
// the request or after it when Async. advertised is the endpoint feeds
// name, the one Options.Redirect moves.
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
		case o.RefuseLease && req.Mode == websub.ModeSubscribe && req.LeaseSeconds != "":
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

// verify verifies intent for req and, when confirmed, adds or removes the
// subscription.
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
	challenge := hubwire.RandomHex(16)
	q := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {challenge}}
	if lease > 0 {
		q.Set("hub.lease_seconds", strconv.FormatInt(int64(lease/time.Second), 10))
	}
	v := Verification{Mode: mode, Topic: topic, Callback: callback, Challenge: challenge, Lease: int64(lease / time.Second)}
	v.Status, v.Body, v.Err = hubwire.Get(ctx, h.client, callback, q, 1<<20)
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

// deny sends hub.mode=denied, forgets the subscription, records the
// verification and returns it.
func (h *Hub) deny(ctx context.Context, callback, topic, reason string) Verification {
	q := url.Values{"hub.mode": {websub.ModeDenied}, "hub.topic": {topic}}
	if reason != "" {
		q.Set("hub.reason", reason)
	}
	v := Verification{Mode: websub.ModeDenied, Topic: topic, Callback: callback}
	v.Status, v.Body, v.Err = hubwire.Get(ctx, h.client, callback, q, 1<<20)
	v.Confirmed = v.Status/100 == 2
	h.mu.Lock()
	delete(h.subs, [2]string{topic, callback})
	h.verifications = append(h.verifications, v)
	h.mu.Unlock()
	return v
}
