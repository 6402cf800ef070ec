// Package channeltest runs local receivers that stand in for the services
// of the delivery channels, each following its service's documented
// contract, rate-limit answers included: a Standard Webhooks receiver, a
// Slack incoming webhook, a Discord webhook, an ntfy topic and a Matrix
// homeserver's client-server send endpoint. They record every request, and
// a test can script answers ahead of the normal one. Tests only.
package channeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is one request a receiver got.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Answer is a scripted answer.
type Answer struct {
	Status int
	Header map[string]string
	Body   string
}

// Receiver is one local service.
type Receiver struct {
	srv *httptest.Server
	// accept checks a request against the service's contract and answers
	// it when it breaks it (returns false).
	accept func(w http.ResponseWriter, r *Request) bool
	// ok answers an accepted request.
	ok func(w http.ResponseWriter, r *Request)

	mu       sync.Mutex
	reqs     []Request
	accepted []Request
	script   []Answer
}

func start(t testing.TB, accept func(http.ResponseWriter, *Request) bool, ok func(http.ResponseWriter, *Request)) *Receiver {
	rc := &Receiver{accept: accept, ok: ok}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, req)
	var next *Answer
	if len(rc.script) > 0 {
		next = &rc.script[0]
		rc.script = rc.script[1:]
	}
	rc.mu.Unlock()
	if next != nil {
		for k, v := range next.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(next.Status)
		_, _ = io.WriteString(w, next.Body)
		return
	}
	if !rc.accept(w, &req) {
		return
	}
	rc.mu.Lock()
	rc.accepted = append(rc.accepted, req)
	rc.mu.Unlock()
	rc.ok(w, &req)
}

// URL is the receiver's base URL.
func (rc *Receiver) URL() string { return rc.srv.URL }

// Then queues answers given, in order, before the service's own.
func (rc *Receiver) Then(as ...Answer) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.script = append(rc.script, as...)
}

// Requests returns every request so far.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.reqs...)
}

// Accepted returns the requests the service accepted.
func (rc *Receiver) Accepted() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.accepted...)
}

// fail answers status with a JSON body.
func fail(w http.ResponseWriter, status int, body any) bool {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
	return false
}

// Webhook is a Standard Webhooks receiver that takes any POST and answers
// 204; verifying the signature is the test's (with its own verifier).
func Webhook(t testing.TB) *Receiver {
	return start(t, func(w http.ResponseWriter, r *Request) bool {
		if r.Method != http.MethodPost {
			return fail(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		}
		return true
	}, func(w http.ResponseWriter, _ *Request) { w.WriteHeader(http.StatusNoContent) })
}
