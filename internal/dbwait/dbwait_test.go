package dbwait_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/metrics"
)

// TestPassLogsOnceAndTimesTheWait: a role whose passes fail because the
// database is away logs one line when it starts waiting — not one per
// failed pass — and one when a pass reaches the database again, with how
// long it waited; the process's gauge is 0 while any role waits and the
// role's wait is counted in seconds. Errors from a database that answers
// neither start nor prolong a wait.
func TestPassLogsOnceAndTimesTheWait(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	m := metrics.New()
	p := dbwait.New(slog.New(slog.NewTextHandler(&buf, nil)), m, clk)
	away := fmt.Errorf("claim outbox: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})
	conflict := &pgconn.PgError{Code: "40001"}

	type step struct {
		role    string
		err     error
		after   time.Duration
		away    bool    // Pass's answer
		up      float64 // feedmail_database_up after it
		mailer  float64 // mailer's wait seconds after it
		digest  float64
		newLogs []string
	}
	for i, s := range []step{
		{"mailer", nil, 0, false, 1, 0, 0, nil},
		{"mailer", conflict, time.Second, false, 1, 0, 0, nil},
		{"mailer", away, time.Second, true, 0, 0, 0, []string{`msg="database unreachable: waiting for it" role=mailer`}},
		{"mailer", away, 5 * time.Second, true, 0, 0, 0, nil},
		{"digest", away, time.Second, true, 0, 0, 0, []string{`role=digest`}},
		{"mailer", away, 5 * time.Second, true, 0, 0, 0, nil},
		{"mailer", errors.New("render: bad template"), 2 * time.Second, false, 0, 13, 0, []string{`msg="database reachable again" role=mailer waited=13s`}},
		{"mailer", away, time.Second, true, 0, 13, 0, []string{`role=mailer`}},
		{"digest", nil, 4 * time.Second, false, 0, 13, 12, []string{`msg="database reachable again" role=digest waited=12s`}},
		{"mailer", nil, time.Second, false, 1, 18, 12, []string{`role=mailer waited=5s`}},
	} {
		clk.Advance(s.after)
		before := strings.Count(buf.String(), "\n")
		if got := p.Pass(s.role, s.err); got != s.away {
			t.Fatalf("step %d: Pass(%s, %v) = %v, want %v", i, s.role, s.err, got, s.away)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var added []string
		if n := strings.Count(buf.String(), "\n"); n > before {
			added = lines[before:n]
		}
		if len(added) != len(s.newLogs) {
			t.Fatalf("step %d: logged %q, want %d line(s) with %q", i, added, len(s.newLogs), s.newLogs)
		}
		for j, want := range s.newLogs {
			if !strings.Contains(added[j], want) {
				t.Errorf("step %d: logged %q, want it to contain %q", i, added[j], want)
			}
		}
		if got := value(t, m.DatabaseUp); got != s.up {
			t.Errorf("step %d: feedmail_database_up = %v, want %v", i, got, s.up)
		}
		for role, want := range map[string]float64{"mailer": s.mailer, "digest": s.digest} {
			if got := value(t, m.DatabaseWait.WithLabelValues(role)); got != want {
				t.Errorf("step %d: feedmail_database_wait_seconds_total{role=%q} = %v, want %v", i, role, got, want)
			}
		}
	}
}

// TestNilProcess: a worker without a Process logs its errors itself.
func TestNilProcess(t *testing.T) {
	var p *dbwait.Process
	if p.Pass("mailer", &pgconn.PgError{Code: "57P01"}) {
		t.Error("a nil Process claimed to have logged the error")
	}
}

// value reads the one series of c.
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var d dto.Metric
	if err := (<-ch).Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}
