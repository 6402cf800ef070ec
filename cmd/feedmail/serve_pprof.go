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
	ln, err := net.Listen("tcp", a.cfg.PprofListen)
	if err != nil {
		return nil, fmt.Errorf("FEEDMAIL_PPROF_LISTEN: listen on %s: %w", a.cfg.PprofListen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("pprof: %w", err)
		}
	}()
	a.log.Info("profiling endpoints listening", "addr", ln.Addr().String())
	return srv, nil
}
