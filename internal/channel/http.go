package channel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
)

// HTTPError is a service's answer other than 2xx.
type HTTPError struct {
	Status int
	// RetryAfter is the wait the answer's Retry-After asked for, 0 when
	// it had none.
	RetryAfter time.Duration
	// Body is the start of the answer's body (for logs and for channels
	// that read it, such as Discord's retry_after).
	Body []byte
	// Header is the answer's header.
	Header http.Header
}

// Error describes the answer, e.g. "http 429: slow down".
func (e *HTTPError) Error() string {
	msg := strings.TrimSpace(string(e.Body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("http %d: %s", e.Status, msg)
}

// ConnsPerHost is how many connections the channel client opens to one
// host at most: more than the outbox ever has requests in flight (8
// targets a pass, 2 passes), so a delivery never waits for another's
// connection. Many readers' targets share a host (a chat service, one
// receiver's paths), and a request waiting for a connection spends its
// timeout waiting: behind two requests hanging until their timeout, one
// was sent with milliseconds left, accepted, then given up on and sent
// again.
const ConnsPerHost = 64

// NewHTTPClient is the client channels deliver with: the fetcher's
// guarded dialer (targets are user-supplied URLs) configured by cfg, no
// redirects followed, and ConnsPerHost connections to a host.
func NewHTTPClient(cfg fetcher.Config) *http.Client {
	cfg.MaxRedirects, cfg.MaxConnsPerHost = -1, ConnsPerHost
	return fetcher.NewHTTPClient(cfg)
}

// maxBody is the most of an answer's body read.
const maxBody = 16 << 10

// Send makes r with hc (NewHTTPClient's) and returns nil for a
// 2xx answer, an *HTTPError for any other answer, or the transport's error
// wrapped. now reads an HTTP-date Retry-After. A request with a credential
// to a plain http URL may only connect to a private address, and only
// when the operator allows private networks (fetcher.PrivateOnly): on the
// way to anywhere else the credential is readable by whoever carries it.
func Send(ctx context.Context, hc *http.Client, r *Request, now time.Time) error {
	if r.Credential && PlainHTTP(r.URL) {
		ctx = fetcher.PrivateOnly(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadTarget, err)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("deliver to %s: %w", req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return &HTTPError{Status: resp.StatusCode, Body: body, Header: resp.Header,
		RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), now)}
}

// RetryAfter reads a Retry-After value (RFC 9110 10.2.3): delay-seconds or
// an HTTP-date, as a wait from now; 0 when absent or malformed.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
		return Seconds(n)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// JudgeHTTP is the judgement most services' answers get: 404 and 410 say
// the target is gone; 408, 425, 429 and 5xx are worth a retry (after
// Retry-After); any other 4xx or 3xx is the target refusing. Without an
// answer, a target the private-network guard refused or a malformed one
// is refused; anything else (a timeout, a dropped connection) is retried.
func JudgeHTTP(err error) Verdict {
	var he *HTTPError
	if errors.As(err, &he) {
		switch s := he.Status; {
		case s == http.StatusNotFound || s == http.StatusGone:
			return Verdict{Action: Gone}
		case s == http.StatusRequestTimeout || s == http.StatusTooEarly || s == http.StatusTooManyRequests || s >= 500:
			return Verdict{Action: Retry, After: he.RetryAfter}
		default:
			return Verdict{Action: Refused}
		}
	}
	switch fetcher.KindOf(err) {
	case fetcher.KindPrivateAddress, fetcher.KindTooManyRedirects, fetcher.KindBadURL:
		return Verdict{Action: Refused}
	}
	if errors.Is(err, ErrBadTarget) {
		return Verdict{Action: Refused}
	}
	return Verdict{Action: Retry}
}

// Seconds is s seconds (a service's float), to the millisecond.
func Seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}

// PlainHTTP reports whether raw is an http:// (not https) URL.
func PlainHTTP(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && strings.EqualFold(u.Scheme, "http")
}
