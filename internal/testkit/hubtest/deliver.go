package hubtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/hubwire"
	"github.com/feedmail/feedmail/internal/websub"
)

// verifyTries is how many times a verification of intent is sent when the
// callback cannot be reached or answers 5xx (a subscriber restarting).
const verifyTries = 3

// verify sends the verification of intent for req (WebSub §5.3) and, when
// the callback echoes the challenge with a 2xx, adds or removes the
// subscription. An unreachable callback or a 5xx is asked again a few
// times; anything else ends the request unverified.
func (h *Hub) verify(ctx context.Context, req subRequest) {
	challenge := hubwire.RandomHex(16)
	q := url.Values{"hub.mode": {req.mode}, "hub.topic": {req.topic}, "hub.challenge": {challenge}}
	if req.mode == "subscribe" {
		q.Set("hub.lease_seconds", strconv.FormatInt(int64(req.lease/time.Second), 10))
	}
	ok := false
	for try := range verifyTries {
		status, body, err := hubwire.Get(ctx, h.o.HTTP, req.callback, q, 1<<10)
		if err == nil && status < 500 {
			ok = status/100 == 2 && body == challenge
			break
		}
		if try+1 < verifyTries && !h.sleep(ctx, h.backoff(try)) {
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		h.counts.Unverified++
		return
	}
	h.counts.Verified++
	if req.mode == "unsubscribe" {
		delete(h.subs[req.topic], req.callback)
		return
	}
	if h.subs[req.topic] == nil {
		h.subs[req.topic] = map[string]sub{}
	}
	h.subs[req.topic][req.callback] = sub{callback: req.callback, secret: req.secret, expires: h.o.Clock.Now().Add(req.lease)}
}

// distribute fetches topic (retrying) and delivers it to every live
// subscriber, each delivery on its own goroutine.
func (h *Hub) distribute(ctx context.Context, topic string) {
	body, ctype, ok := h.fetch(ctx, topic)
	if !ok {
		return
	}
	h.mu.Lock()
	now := h.o.Clock.Now()
	var targets []sub
	for _, s := range h.subs[topic] {
		if now.Before(s.expires) {
			targets = append(targets, s)
		}
	}
	h.mu.Unlock()
	for _, s := range targets {
		h.goWork(func(ctx context.Context) { h.deliver(ctx, topic, s, body, ctype) })
	}
}

// fetch GETs topic until a 200 or RetryFor passes and returns its body and
// Content-Type; false when it gave up (or ctx ended).
func (h *Hub) fetch(ctx context.Context, topic string) ([]byte, string, bool) {
	start := time.Now()
	for try := 0; ; try++ {
		body, ctype, err := h.fetchOnce(ctx, topic)
		if err == nil {
			h.count(func(c *Counts) { c.Fetches++ })
			return body, ctype, true
		}
		h.count(func(c *Counts) { c.FetchRetries++ })
		if time.Since(start) > h.o.RetryFor || !h.sleep(ctx, h.backoff(try)) {
			h.o.Log.Warn("hub: gave up fetching a topic", "topic", topic, "err", err)
			return nil, "", false
		}
	}
}

func (h *Hub) fetchOnce(ctx context.Context, topic string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, topic, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := h.o.HTTP.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 10<<20))
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("topic answered %d", resp.StatusCode)
	}
	return body, resp.Header.Get("Content-Type"), nil
}

// deliver POSTs body to s until it answers 2xx or RetryFor passes. When
// the Resend fault picks this delivery, a first 2xx is treated as lost and
// the content is sent once more.
func (h *Hub) deliver(ctx context.Context, topic string, s sub, body []byte, ctype string) {
	h.mu.Lock()
	resend := h.o.Resend > 0 && h.rnd.Float64() < h.o.Resend
	h.mu.Unlock()
	start := time.Now()
	for try := 0; ; try++ {
		err := h.post(ctx, topic, s, body, ctype)
		switch {
		case err == nil && resend:
			resend = false
			h.count(func(c *Counts) { c.Resent++ })
		case err == nil:
			h.count(func(c *Counts) { c.Delivered++ })
			return
		default:
			h.count(func(c *Counts) { c.Retries++ })
		}
		if time.Since(start) > h.o.RetryFor || !h.sleep(ctx, h.backoff(try)) {
			h.count(func(c *Counts) { c.GaveUp++ })
			h.o.Log.Warn("hub: gave up a delivery", "topic", topic, "callback", s.callback, "err", err)
			return
		}
	}
}

// post sends one content distribution (WebSub §7): the body with its
// Content-Type, Link headers naming the hub and the topic, and, for a
// subscription with a secret, X-Hub-Signature: sha256=HMAC. Any answer
// but 2xx is an error.
func (h *Hub) post(ctx context.Context, topic string, s sub, body []byte, ctype string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.callback, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Add("Link", fmt.Sprintf(`<%s>; rel="hub"`, h.url))
	req.Header.Add("Link", fmt.Sprintf(`<%s>; rel="self"`, topic))
	if s.secret != "" {
		sig, err := websub.Sign([]byte(s.secret), "sha256", body)
		if err != nil {
			return err
		}
		req.Header.Set(websub.SignatureHeader, sig)
	}
	resp, err := h.o.HTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("callback answered %d", resp.StatusCode)
	}
	return nil
}

// backoff is the wait after failed attempt number try (from 0): doubling
// from FirstBackoff, capped at MaxBackoff.
func (h *Hub) backoff(try int) time.Duration {
	d := h.o.FirstBackoff
	for range min(try, 30) {
		d *= 2
		if d >= h.o.MaxBackoff {
			return h.o.MaxBackoff
		}
	}
	return min(d, h.o.MaxBackoff)
}

// sleep waits d or until ctx ends; false when ctx ended.
func (h *Hub) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Publish tells the hub at hubURL that topic changed (hub.mode=publish,
// hub.url=topic), as a publisher does; the hub answers 202 and
// distributes afterwards. It returns an error for any other answer.
func Publish(ctx context.Context, client *http.Client, hubURL, topic string) error {
	form := url.Values{"hub.mode": {"publish"}, "hub.url": {topic}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hubURL, bytes.NewBufferString(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("hub publish: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("hub publish: answered %d", resp.StatusCode)
	}
	return nil
}
