package websubtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/feedmail/feedmail/internal/websub"
)

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

// record appends d to the deliveries and returns it.
func (h *Hub) record(d Delivery) Delivery {
	h.mu.Lock()
	h.deliveries = append(h.deliveries, d)
	h.mu.Unlock()
	return d
}
