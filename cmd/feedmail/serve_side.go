package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// listenPprof serves Go's profiling endpoints (/debug/pprof/) on
// FEEDMAIL_PPROF_LISTEN, a loopback address apart from the public
// listener, so an operator can profile a running serve (go tool pprof
// http://ADDR/debug/pprof/profile). It returns nil when the variable is
// unset; a failure to serve later goes to errc.
func (a *app) listenPprof(errc chan<- error) (*http.Server, error) {
	if a.cfg.PprofListen == "" {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return a.listenSide("FEEDMAIL_PPROF_LISTEN", a.cfg.PprofListen, "profiling endpoints", mux, errc)
}

// listenMetrics serves /metrics on FEEDMAIL_METRICS_LISTEN, apart from the
// public listener (which then has no /metrics), whatever the process's
// roles. It returns nil when the variable is unset; a failure to serve
// later goes to errc.
func (a *app) listenMetrics(errc chan<- error) (*http.Server, error) {
	if a.cfg.MetricsListen == "" || a.metrics == nil {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	return a.listenSide("FEEDMAIL_METRICS_LISTEN", a.cfg.MetricsListen, "metrics", mux, errc)
}

// listenSide serves h on addr (the value of variable name), a listener
// beside the public one, for what, and logs where it listens.
func (a *app) listenSide(name, addr, what string, h http.Handler, errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s: %w", what, err)
		}
	}()
	a.log.Info(what+" listening", "addr", ln.Addr().String())
	return srv, nil
}
