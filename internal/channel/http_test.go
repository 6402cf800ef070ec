package channel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/fetcher"
)

func TestJudgeHTTP(t *testing.T) {
	private := fetcher.CheckAddr(netip.MustParseAddr("127.0.0.1"))
	cases := []struct {
		name  string
		err   error
		want  channel.Action
		after time.Duration
	}{
		{"404", &channel.HTTPError{Status: 404}, channel.Gone, 0},
		{"410", &channel.HTTPError{Status: 410}, channel.Gone, 0},
		{"429 with Retry-After", &channel.HTTPError{Status: 429, RetryAfter: time.Minute}, channel.Retry, time.Minute},
		{"503", &channel.HTTPError{Status: 503}, channel.Retry, 0},
		{"408", &channel.HTTPError{Status: 408}, channel.Retry, 0},
		{"400", &channel.HTTPError{Status: 400}, channel.Refused, 0},
		{"401", &channel.HTTPError{Status: 401}, channel.Refused, 0},
		{"403", &channel.HTTPError{Status: 403}, channel.Refused, 0},
		{"302 not followed", &channel.HTTPError{Status: 302}, channel.Refused, 0},
		{"private address", fmt.Errorf("dial: %w", private), channel.Refused, 0},
		{"bad target", fmt.Errorf("x: %w", channel.ErrBadTarget), channel.Refused, 0},
		{"timeout", context.DeadlineExceeded, channel.Retry, 0},
		{"reset", errors.New("connection reset by peer"), channel.Retry, 0},
	}
	for _, c := range cases {
		if v := channel.JudgeHTTP(c.err); v.Action != c.want || v.After != c.after {
			t.Errorf("%s: %v after %v, want %v after %v", c.name, v.Action, v.After, c.want, c.after)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"120":                           2 * time.Minute,
		"1.5":                           1500 * time.Millisecond,
		"-3":                            0,
		"soon":                          0,
		"Mon, 02 Mar 2026 09:05:00 GMT": 5 * time.Minute,
		"Mon, 02 Mar 2026 08:55:00 GMT": 0,
	}
	for in, want := range cases {
		if got := channel.RetryAfter(in, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"https://hooks.example.org/x", "https://hooks.example.org/x", true},
		{"  http://h.example.org:8080/a?b=c  ", "http://h.example.org:8080/a?b=c", true},
		{"", "", false},
		{"ftp://h.example.org/", "", false},
		{"hooks.example.org/x", "", false},
		{"https://user:pw@h.example.org/", "", false},
		{"https://", "", false},
		{"https://h.example.org/" + strings.Repeat("a", channel.MaxTargetLen-22), "https://h.example.org/" + strings.Repeat("a", channel.MaxTargetLen-22), true},
		{"https://h.example.org/" + strings.Repeat("a", channel.MaxTargetLen-21), "", false},
	}
	for _, c := range cases {
		got, err := channel.CheckURL(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("CheckURL(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, channel.ErrBadTarget) {
			t.Errorf("CheckURL(%q): %v does not wrap ErrBadTarget", c.in, err)
		}
	}
}

func TestSend(t *testing.T) {
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "1" || r.Method != http.MethodPut {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "30")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("slow down"))
	}))
	defer srv.Close()
	hc := fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, MaxRedirects: -1})
	r := &channel.Request{Method: http.MethodPut, URL: srv.URL, Header: http.Header{"X-Test": {"1"}}, Body: []byte("{}")}
	if err := channel.Send(context.Background(), hc, r, time.Now()); err != nil {
		t.Fatalf("204: %v", err)
	}
	status = http.StatusTooManyRequests
	err := channel.Send(context.Background(), hc, r, time.Now())
	var he *channel.HTTPError
	if !errors.As(err, &he) || he.Status != 429 || he.RetryAfter != 30*time.Second || string(he.Body) != "slow down" {
		t.Fatalf("429: %v", err)
	}
	// The guard refuses loopback unless allowed: the target's fault.
	guarded := fetcher.NewHTTPClient(fetcher.Config{MaxRedirects: -1})
	if err := channel.Send(context.Background(), guarded, r, time.Now()); channel.JudgeHTTP(err).Action != channel.Refused {
		t.Errorf("guarded send to loopback: %v judged %v, want refused", err, channel.JudgeHTTP(err).Action)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSendKeepsCredentialsOffPlainHTTP: a request carrying a credential to
// an http:// URL goes out marked fetcher.PrivateOnly (the guarded client
// then lets it reach only a private address the operator allowed); over
// https, or without a credential, it is not marked. And with the guarded
// client and private networks not allowed, such a request is refused
// before it connects.
func TestSendKeepsCredentialsOffPlainHTTP(t *testing.T) {
	var marked bool
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		marked = fetcher.IsPrivateOnly(r.Context())
		return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}}, nil
	})}
	for _, c := range []struct {
		url        string
		credential bool
		want       bool
	}{
		{"http://ntfy.example.org/topic", true, true},
		{"HTTP://ntfy.example.org/topic", true, true},
		{"https://ntfy.example.org/topic", true, false},
		{"http://ntfy.example.org/topic", false, false},
	} {
		r := &channel.Request{Method: http.MethodPost, URL: c.url, Credential: c.credential}
		if err := channel.Send(context.Background(), hc, r, time.Now()); err != nil {
			t.Fatal(err)
		}
		if marked != c.want {
			t.Errorf("%s, credential %v: private-only %v, want %v", c.url, c.credential, marked, c.want)
		}
	}

	var hitCount atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hitCount.Add(1) }))
	defer srv.Close()
	r := &channel.Request{Method: http.MethodPost, URL: srv.URL, Header: http.Header{"Authorization": {"Bearer tk"}}, Credential: true}
	allowed := fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, MaxRedirects: -1})
	if err := channel.Send(context.Background(), allowed, r, time.Now()); err != nil || hitCount.Load() != 1 {
		t.Fatalf("token over http to loopback, private networks allowed: %v, %d hits", err, hitCount.Load())
	}
	refused := fetcher.NewHTTPClient(fetcher.Config{MaxRedirects: -1})
	err := channel.Send(context.Background(), refused, r, time.Now())
	if channel.JudgeHTTP(err).Action != channel.Refused || !strings.Contains(err.Error(), "plain http") || hitCount.Load() != 1 {
		t.Errorf("token over http, private networks not allowed: %v (%d hits), want refused saying plain http", err, hitCount.Load())
	}
}

// Deliveries to one host do not wait for each other's connections: with
// two requests hanging at a receiver (until their timeout), the others to
// the same host are answered at once. With the fetcher's 2 connections a
// host, they waited behind the hung ones, under their own timeout, and
// one sent with milliseconds left was accepted and then given up on: a
// webhook delivered twice.
func TestDeliveriesToOneHostDoNotWaitForConnections(t *testing.T) {
	const hung, quick = 2, 6
	release := make(chan struct{})
	var hanging atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/hang") {
			hanging.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	defer close(release)
	hc := channel.NewHTTPClient(fetcher.Config{AllowPrivate: true, Timeout: 10 * time.Minute})
	defer hc.CloseIdleConnections()
	send := func(path string) error {
		r := &channel.Request{Method: http.MethodPost, URL: srv.URL + path, Body: []byte("{}")}
		return channel.Send(context.Background(), hc, r, time.Now())
	}
	for i := range hung {
		go func() { _ = send(fmt.Sprintf("/hang/%d", i)) }()
	}
	deadline := time.Now().Add(30 * time.Second)
	for hanging.Load() < hung {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests reached the receiver and hang", hanging.Load(), hung)
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, quick)
	for i := range quick {
		go func() { done <- send(fmt.Sprintf("/ok/%d", i)) }()
	}
	timeout := time.After(30 * time.Second)
	for i := range quick {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("delivery %d: %v", i, err)
			}
		case <-timeout:
			t.Fatalf("%d of %d deliveries answered in 30 s while %d requests to the same host hang", i, quick, hung)
		}
	}
}
