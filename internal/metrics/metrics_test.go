package metrics_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestDiscarded(t *testing.T) {
	for _, c := range []struct {
		name   string
		opened int64
		st     sql.DBStats
		want   int64
	}{
		{"all open", 5, sql.DBStats{OpenConnections: 5}, 0},
		{"closed by the limits", 9, sql.DBStats{OpenConnections: 5, MaxIdleClosed: 1, MaxIdleTimeClosed: 2, MaxLifetimeClosed: 1}, 0},
		{"two broken", 9, sql.DBStats{OpenConnections: 5, MaxIdleTimeClosed: 2}, 2},
		{"read between an open and its count", 4, sql.DBStats{OpenConnections: 5}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := metrics.Discarded(c.opened, c.st); got != c.want {
				t.Errorf("Discarded(%d, %+v) = %d, want %d", c.opened, c.st, got, c.want)
			}
		})
	}
}

// A transaction whose context ends before its commit costs the pool its
// connection (database/sql discards it: pgx's stdlib driver cannot reset
// one): the pool metrics must show the connection opened and discarded.
func TestWatchPoolCountsDiscardedConnections(t *testing.T) {
	m := metrics.New()
	st := storetest.OpenDSN(t, storetest.FreshDSN(t, storetest.PostgresURL(t)),
		storetest.Options{MaxOpenConns: 1, NoMigrate: true, OnConnect: m.CountConnect})
	db, err := st.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	m.WatchPool(db)
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, m, "feedmail_db_connections_opened_total"); got != 1 {
		t.Fatalf("opened after the first ping = %v, want 1", got)
	}
	tctx, cancel := context.WithCancel(ctx)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(tctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	cancel()
	// The pool discards it on the transaction's own goroutine.
	for deadline := time.Now().Add(10 * time.Second); db.Stats().OpenConnections != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled transaction's connection still open after 10 s: %+v", db.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"feedmail_db_connections_opened_total":    2,
		"feedmail_db_connections_discarded_total": 1,
		"go_sql_open_connections":                 1,
		"go_sql_max_open_connections":             1,
	} {
		if got := gauge(t, m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// gauge is the value of m's one series called name.
func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		s := f.GetMetric()[0]
		switch {
		case s.GetCounter() != nil:
			return s.GetCounter().GetValue()
		case s.GetGauge() != nil:
			return s.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}
