package websub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Modes of hub.mode.
const (
	ModeSubscribe   = "subscribe"
	ModeUnsubscribe = "unsubscribe"
	ModeDenied      = "denied" // hub → subscriber only
)

// MaxSecretLen: WebSub §5.1 requires hub.secret to be under 200 bytes.
const MaxSecretLen = 199

// DefaultRenewal is how long after verification a subscription with no
// (usable) lease is renewed.
const DefaultRenewal = 24 * time.Hour

// MinRenewal is the shortest wait before a renewal, however short the lease:
// a hub granting seconds-long leases must not make us hammer it (the poller's
// backup polling covers a lapse).
const MinRenewal = time.Minute

// maxLease caps hub.lease_seconds read from a hub (ten years), far from
// time.Duration overflow.
const maxLease = 10 * 365 * 24 * time.Hour

// Errors of SubscribeRequest and CheckIntent. Test with errors.Is.
var (
	// ErrBadRequest: SubscribeRequest got a non-http(s) or relative URL, an
	// unknown mode or an over-long secret.
	ErrBadRequest = errors.New("websub: bad subscription request")
	// ErrDenied: the hub refused the subscription (hub.mode=denied); the
	// message carries hub.reason. Answer 2xx; stop asking this hub for now.
	ErrDenied = errors.New("websub: subscription denied by hub")
	// ErrUnknownTopic: the verification names another topic (websub.rocks
	// 205). The handler answers 404.
	ErrUnknownTopic = errors.New("websub: verification for an unknown topic")
	// ErrUnexpectedMode: a verification of a mode we did not ask for (e.g.
	// an unsubscribe we never requested). The handler answers 404.
	ErrUnexpectedMode = errors.New("websub: verification for a mode not requested")
	// ErrBadVerification: an unknown hub.mode or no hub.challenge. The
	// handler answers 400 (404 would also do: either refuses).
	ErrBadVerification = errors.New("websub: malformed verification request")
)

// SubscribeRequest builds the POST to hub that asks for (mode "subscribe")
// or ends (mode "unsubscribe") a subscription of callback to topic. The body
// is form-encoded: hub.mode, hub.topic, hub.callback, and for subscribe
// hub.secret (when non-empty) and hub.lease_seconds (when lease ≥ 1 s; whole
// seconds; the hub may ignore it). An unsubscription sends neither. The
// request's GetBody is set, so a client following a 307/308 from the hub
// (websub.rocks 203, 204) sends the same body again; a 301/302/303 turns a
// POST into a GET in net/http, which no hub should answer with. hub, topic
// and callback must be absolute http(s) URLs; errors wrap ErrBadRequest.
// The caller adds a User-Agent and sends it with its SSRF-guarded client.
func SubscribeRequest(ctx context.Context, hub, topic, callback, secret string, lease time.Duration, mode string) (*http.Request, error) {
	if mode != ModeSubscribe && mode != ModeUnsubscribe {
		return nil, fmt.Errorf("%w: mode %q", ErrBadRequest, mode)
	}
	for _, u := range []struct{ name, v string }{{"hub", hub}, {"topic", topic}, {"callback", callback}} {
		if !isHTTPURL(u.v) {
			return nil, fmt.Errorf("%w: %s %q is not an absolute http(s) URL", ErrBadRequest, u.name, u.v)
		}
	}
	if len(secret) > MaxSecretLen {
		return nil, fmt.Errorf("%w: secret of %d bytes, must be under 200", ErrBadRequest, len(secret))
	}
	form := url.Values{
		"hub.mode":     {mode},
		"hub.topic":    {topic},
		"hub.callback": {callback},
	}
	if mode == ModeSubscribe {
		if secret != "" {
			form.Set("hub.secret", secret)
		}
		if s := int64(lease / time.Second); s > 0 {
			form.Set("hub.lease_seconds", strconv.FormatInt(s, 10))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hub, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// CheckIntent checks a hub's verification of intent (the query of its GET to
// our callback) against the topic and mode we asked for. expectMode is
// ModeSubscribe, ModeUnsubscribe, or "" to accept either.
//
// On success the handler answers 200 with challenge as the body, and lease
// is hub.lease_seconds (0 when absent, not a non-negative integer, or for
// unsubscribe; capped at ten years; RenewAt treats 0 as "renew daily").
// Errors, checked in this order:
//
//   - hub.topic differs from expectTopic (exact string match: the topic is
//     the self URL we sent): ErrUnknownTopic, answer 404;
//   - hub.mode=denied: ErrDenied wrapping hub.reason, answer 200;
//   - another mode than expected: ErrUnexpectedMode, answer 404;
//   - unknown mode or empty hub.challenge: ErrBadVerification.
func CheckIntent(q url.Values, expectTopic string, expectMode string) (challenge string, lease time.Duration, err error) {
	mode := q.Get("hub.mode")
	if topic := q.Get("hub.topic"); topic != expectTopic {
		return "", 0, fmt.Errorf("%w: %q (mode %q)", ErrUnknownTopic, truncate(topic, 200), truncate(mode, 20))
	}
	switch mode {
	case ModeDenied:
		reason := q.Get("hub.reason")
		if reason == "" {
			return "", 0, ErrDenied
		}
		return "", 0, fmt.Errorf("%w: %s", ErrDenied, truncate(reason, 500))
	case ModeSubscribe, ModeUnsubscribe:
	default:
		return "", 0, fmt.Errorf("%w: hub.mode %q", ErrBadVerification, truncate(mode, 20))
	}
	if expectMode != "" && mode != expectMode {
		return "", 0, fmt.Errorf("%w: got %s, expected %s", ErrUnexpectedMode, mode, expectMode)
	}
	challenge = q.Get("hub.challenge")
	if challenge == "" {
		return "", 0, fmt.Errorf("%w: no hub.challenge", ErrBadVerification)
	}
	if mode == ModeSubscribe {
		if s, err := strconv.ParseInt(strings.TrimSpace(q.Get("hub.lease_seconds")), 10, 64); err == nil && s > 0 {
			lease = time.Duration(min(s, int64(maxLease/time.Second))) * time.Second
		}
	}
	return challenge, lease, nil
}

// RenewAt returns when to renew a subscription verified at verifiedAt with
// lease: half-way through the lease (never sooner than MinRenewal after
// verification), or DefaultRenewal (daily) when the lease is 0 or unknown.
func RenewAt(verifiedAt time.Time, lease time.Duration) time.Time {
	if lease <= 0 {
		return verifiedAt.Add(DefaultRenewal)
	}
	return verifiedAt.Add(max(lease/2, MinRenewal))
}
