package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/web"
)

// fzT0 is the fake clock's start in the fuzz targets.
var fzT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// fzEnv is a web server with the ping and WebSub routes mounted on a fresh
// store, called in process (httptest.NewRecorder): the fuzz targets'
// harness. It takes a testing.TB so that a *testing.F can build it once.
type fzEnv struct {
	tb    testing.TB
	ctx   context.Context
	clk   *clock.Fake
	st    *store.Store
	srv   *web.Server
	h     http.Handler
	links links.Links
	tok   *token.Signer

	mu     sync.Mutex
	pushed [][]byte
}

func newFzEnv(tb testing.TB) *fzEnv {
	tb.Helper()
	e := &fzEnv{tb: tb, ctx: context.Background(), clk: clock.NewFake(fzT0)}
	e.st = storetest.Open(tb, storetest.Options{Clock: e.clk})
	var err error
	e.tok, err = token.NewSigner([]byte("fuzz-secret-0123456789abcdef0123"))
	if err != nil {
		tb.Fatal(err)
	}
	e.srv = web.New(web.Deps{Store: e.st, Clock: e.clk, Tokens: e.tok, Metrics: metrics.New(),
		Config: config.Config{BaseURL: "http://feedmail.test", From: "feedmail@example.com"}})
	e.srv.MountWebSub(web.WebSubOptions{Ingest: func(_ context.Context, _ int64, body []byte, _ string) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.pushed = append(e.pushed, append([]byte(nil), body...))
		return nil
	}})
	// No per-IP limit worth the name: the fuzzer is one client.
	e.srv.MountPings(web.PingOptions{PerIP: web.Limit{Every: time.Nanosecond, Burst: 1 << 30}})
	e.h = e.srv.Handler()
	e.links = links.New("http://feedmail.test", e.tok, "feedmail@example.com")
	return e
}

// feed makes a feed, followed by one confirmed reader when followed.
func (e *fzEnv) feed(u, site string, followed bool) *store.Feed {
	e.tb.Helper()
	f, _, err := e.st.EnsureFeed(e.ctx, u)
	if err != nil {
		e.tb.Fatal(err)
	}
	if site != "" {
		if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("site_url", site).Error; err != nil {
			e.tb.Fatal(err)
		}
	}
	if followed {
		usr, _, err := e.st.EnsureUser(e.ctx, "reader-"+u[len(u)-8:]+"@example.com")
		if err != nil {
			e.tb.Fatal(err)
		}
		if _, err := e.st.Subscribe(e.ctx, usr.ID, f.ID, nil, true); err != nil {
			e.tb.Fatal(err)
		}
	}
	f, err = e.st.FeedByID(e.ctx, f.ID)
	if err != nil {
		e.tb.Fatal(err)
	}
	return f
}

// serve sends one request through the whole handler chain (middleware,
// cross-origin protection, routing).
func (e *fzEnv) serve(req *http.Request) (int, http.Header, []byte) {
	req.RemoteAddr = "198.51.100.7:4242"
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func (e *fzEnv) takePushed() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pushed
	e.pushed = nil
	return p
}
