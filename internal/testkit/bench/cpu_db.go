package bench

import (
	"context"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// followDB follows the CPU time of the run's own Postgres backends (the
// pool's connections, found by their application_name) when the database
// is a Postgres server on this machine, sampling them every 100 ms from a
// connection of its own (not counted, not measured) as connections come
// and go. The function it returns stops and returns their CPU since; 0
// when it cannot be measured (SQLite, a remote server, no /proc).
func (e *env) followDB(ctx context.Context) (stop func() time.Duration) {
	mon := e.monitor(ctx)
	if mon == nil {
		return func() time.Duration { return 0 }
	}
	var p pgCPU
	sample := func() {
		// No database name: no autovacuum worker is listed, only the
		// pool's backends and the parallel workers they start.
		if backends, workers, _, err := pgPids(ctx, mon, e.app, ""); err == nil {
			p.add(append(backends, workers...))
		}
	}
	sample()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	})
	return func() time.Duration {
		close(done)
		wg.Wait()
		sample()
		return p.total
	}
}

// monitor returns the connection followDB samples through, opened on first
// use; nil unless the database is a Postgres server on loopback and /proc
// is there to read.
func (e *env) monitor(ctx context.Context) *store.Store {
	if e.mon != nil || e.app == "" || !e.st.Postgres() {
		return e.mon
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil
	}
	u, err := url.Parse(e.dsn)
	if err != nil {
		return nil
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1", "":
	default:
		return nil
	}
	q := u.Query()
	q.Set("application_name", e.app+"-monitor")
	u.RawQuery = q.Encode()
	mon, err := store.Open(ctx, u.String(), store.Options{MaxOpenConns: 1})
	if err != nil {
		e.cfg.Log.Warn("bench: no monitor connection; the database's CPU is not measured", "err", err)
		return nil
	}
	e.mon = mon
	e.cleanup = append(e.cleanup, func() { _ = mon.Close() })
	return mon
}
