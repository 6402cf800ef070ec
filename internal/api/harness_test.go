package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// servedDoc is the OpenAPI document the server serves (Document with this
// build's channels).
func servedDoc(t *testing.T) []byte {
	t.Helper()
	b, err := Document(channels.All().Names())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadDoc loads and validates openapi.json with kin-openapi (OpenAPI 3.1,
// JSON Schema 2020-12 for the schemas).
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(servedDoc(t))
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableSchemaFormatValidation(), openapi3.EnableMultiError()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// harness is an API server on a fresh store, with a fake clock, a feed
// farm, and every request and answer checked against openapi.json.
type harness struct {
	t      *testing.T
	st     *store.Store
	clk    *clock.Fake
	farm   *farm.Farm
	srv    *Server
	router routers.Router
}

func newHarness(t *testing.T, lim Limit) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := storetest.Open(t, storetest.Options{Clock: clk})
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	subs := &subscribe.Service{Store: st, Clock: clk, Log: log, TrialCredits: 100,
		Fetch: fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 10 * time.Second})}
	doc := loadDoc(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, st: st, clk: clk, farm: fm, router: router,
		srv: New(Deps{Store: st, Subs: subs, Clock: clk, Log: log, Limit: lim})}
}

// call is one request: a body of nil sends none; docInvalid marks a
// request that breaks openapi.json on purpose (so the document must
// refuse it too).
type call struct {
	method, path, token string
	body                any
	ctype               string // the body's media type, application/json when ""
	docInvalid          bool
}

// do serves c and checks the request (unless c.docInvalid, when the
// document must refuse it) and the answer against openapi.json.
func (h *harness) do(c call) *httptest.ResponseRecorder {
	h.t.Helper()
	var raw []byte
	if c.body != nil {
		if s, ok := c.body.(string); ok {
			raw = []byte(s)
		} else {
			var err error
			if raw, err = json.Marshal(c.body); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	mk := func() *http.Request {
		r := httptest.NewRequest(c.method, "http://feedmail.test"+c.path, bytes.NewReader(raw))
		if c.body != nil {
			r.Header.Set("Content-Type", cmp.Or(c.ctype, "application/json"))
		}
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		return r
	}
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, mk())
	h.checkDoc(c, mk(), w)
	return w
}

// checkDoc holds the request and the answer w to openapi.json.
func (h *harness) checkDoc(c call, r *http.Request, w *httptest.ResponseRecorder) {
	h.t.Helper()
	route, params, err := h.router.FindRoute(r)
	if err != nil {
		if c.docInvalid {
			return // a path the document does not have: refused as it should be
		}
		h.t.Fatalf("%s %s: no route in openapi.json: %v", c.method, c.path, err)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && !c.docInvalid {
		h.t.Errorf("%s %s: the request breaks openapi.json: %v", c.method, c.path, err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: w.Code, Header: w.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(w.Body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		h.t.Errorf("%s %s: the answer %d breaks openapi.json: %v\n%s", c.method, c.path, w.Code, err, w.Body.String())
	}
}

// mustRefuse fails the test unless openapi.json refuses c (no route for
// it, or the request breaks its parameters or body).
func (h *harness) mustRefuse(c call) {
	h.t.Helper()
	r := httptest.NewRequest(c.method, "http://feedmail.test"+c.path, nil)
	route, params, err := h.router.FindRoute(r)
	if err != nil {
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err == nil {
		h.t.Errorf("%s %s: openapi.json accepts this bad request", c.method, c.path)
	}
}

// user makes an account with a token and returns both.
func (h *harness) user(email string) (*store.User, string) {
	h.t.Helper()
	u, _, err := h.st.EnsureUser(context.Background(), email)
	if err != nil {
		h.t.Fatal(err)
	}
	tok, _, err := IssueToken(context.Background(), h.st, u.ID, "test")
	if err != nil {
		h.t.Fatal(err)
	}
	return u, tok
}

// subscribed makes an active subscription of u to a new feed at url.
func (h *harness) subscribed(u *store.User, url string) *store.Subscription {
	h.t.Helper()
	ctx := context.Background()
	f, _, err := h.st.EnsureFeed(ctx, url)
	if err != nil {
		h.t.Fatal(err)
	}
	sub, err := h.st.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil {
		h.t.Fatal(err)
	}
	return sub
}

// decode reads w's JSON body into a map.
func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, w.Body.String())
	}
	return m
}
