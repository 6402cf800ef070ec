package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/web"
)

// role sets up a background worker (it may add routes to srv) and returns the
// function that runs it until ctx ends.
type role func(a *app, srv *web.Server) (run func(ctx context.Context) error, err error)

// roles maps FEEDMAIL_ROLES names to their workers; "web" is the HTTP server
// itself. Each worker's constructor lives in its own file.
func roles() map[string]role {
	return map[string]role{
		"mailer":  roleMailer,
		"digest":  roleDigest,
		"poller":  rolePoller,
		"inbound": roleInbound,
		// workers register here
	}
}

// mounts add routes served by the web role that belong to other parts
// (WebSub callbacks, pings, payments); each lives in its own file.
func mounts() []func(a *app, srv *web.Server) error {
	return []func(a *app, srv *web.Server) error{
		mountCredits,
		mountWebSub,
		mountESP,
		// route groups register here
	}
}

// cmdServe runs the roles of FEEDMAIL_ROLES in this process until ctx ends
// or one fails: the workers, and the HTTP server with its mounts for "web".
func cmdServe(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "serve")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := a.loadDKIM(); err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("%s-%d", hostname(), os.Getpid())
	a.log.Info("feedmail starting", "roles", a.cfg.Roles, "database", s.Dialect, "owner", owner)
	a.dbWait = dbwait.New(a.log, a.metrics, a.clock)
	if a.cfg.PlainHTTPBaseURL() {
		a.log.Warn("FEEDMAIL_BASE_URL is not https: RFC 8058 one-click unsubscribe needs https, "+
			"so mailbox providers will not offer it for the links in our emails", "base_url", a.cfg.BaseURL)
	}
	if a.cfg.PublicMetrics() {
		a.log.Warn("/metrics is answered on FEEDMAIL_LISTEN, which FEEDMAIL_BASE_URL makes public: "+
			"set FEEDMAIL_METRICS_LISTEN to serve it on an address of its own, or refuse /metrics at the proxy",
			"base_url", a.cfg.BaseURL)
	}

	srv := web.New(web.Deps{Store: s, Config: a.cfg, Clock: a.clock, Log: a.log, Metrics: a.metrics, Tokens: a.tokens})
	if a.cfg.HasRole("web") {
		for _, m := range mounts() {
			if err := m(a, srv); err != nil {
				return err
			}
		}
	}
	workers, err := a.workers(srv)
	if err != nil {
		return err
	}
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	errc := make(chan error, len(a.cfg.Roles)+3)
	for _, wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wk.run(workCtx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("role %s: %w", wk.name, err)
			}
		}()
	}
	var httpSrv *http.Server
	if a.cfg.HasRole("web") {
		if httpSrv, err = a.listen(srv, errc); err != nil {
			cancelWork()
			wg.Wait()
			return err
		}
	}
	for _, side := range []func(chan<- error) (*http.Server, error){a.listenPprof, a.listenMetrics} {
		sideSrv, err := side(errc)
		if err != nil {
			cancelWork()
			wg.Wait()
			return err
		}
		if sideSrv != nil {
			defer sideSrv.Close()
		}
	}
	var runErr error
	select {
	case <-ctx.Done():
		a.log.Info("shutting down")
	case runErr = <-errc:
		a.log.Error("stopping after a failure", "err", runErr)
	}
	a.stop(httpSrv, cancelWork, &wg)
	return runErr
}

// worker is a role's run function, with the role's name.
type worker struct {
	name string
	run  func(context.Context) error
}

// workers sets up the roles other than "web", in FEEDMAIL_ROLES order;
// roles this build lacks are skipped with a warning.
func (a *app) workers(srv *web.Server) ([]worker, error) {
	all := roles()
	var out []worker
	for _, name := range a.cfg.Roles {
		if name == "web" {
			continue
		}
		r, ok := all[name]
		if !ok {
			a.log.Warn("role not available in this build", "role", name)
			continue
		}
		run, err := r(a, srv)
		if err != nil {
			return nil, fmt.Errorf("role %s: %w", name, err)
		}
		out = append(out, worker{name, run})
	}
	return out, nil
}

// listen serves srv on FEEDMAIL_LISTEN; a failure of the server later is
// sent to errc.
func (a *app) listen(srv *web.Server, errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http: %w", err)
		}
	}()
	a.log.Info("listening", "addr", ln.Addr().String(), "base_url", a.cfg.BaseURL)
	return httpSrv, nil
}

// stop shuts the HTTP server down (10 s for requests under way), then stops
// the workers, waiting up to 30 s for them.
func (a *app) stop(httpSrv *http.Server, cancelWork context.CancelFunc, wg *sync.WaitGroup) {
	if httpSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = httpSrv.Shutdown(sctx)
		cancel()
	}
	cancelWork()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		a.log.Warn("workers did not stop within 30 s")
	}
	a.log.Info("stopped")
}

func cmdMigrate(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "migrate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	v, err := s.Migrate(ctx)
	if err != nil {
		return err
	}
	return a.printJSON(map[string]any{"database": s.Dialect, "version": v})
}
