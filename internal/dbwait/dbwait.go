// Package dbwait tells when a worker's loop (poller, mailer, digest)
// cannot reach the database and when it can again: one log line when a
// role starts waiting, one when it is back with how long it waited, and
// the process's database metrics (feedmail_database_up,
// feedmail_database_wait_seconds_total). It only observes the outcome of
// each pass: it must not retry, sleep or decide what a loop does next.
package dbwait

import (
	"log/slog"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
)

// Process follows the roles of one process. A nil *Process observes
// nothing.
type Process struct {
	log *slog.Logger
	m   *metrics.Metrics
	clk clock.Clock

	mu      sync.Mutex
	waiting map[string]time.Time // role → when its wait began
}

// New returns a Process that logs to log and records in m (either may be
// nil), timing waits by clk.
func New(log *slog.Logger, m *metrics.Metrics, clk clock.Clock) *Process {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Process{log: log, m: m, clk: clk, waiting: map[string]time.Time{}}
}

// Pass records the outcome of one pass of role's loop and reports whether
// err says the database is unreachable (store.Unreachable). Such an error
// is logged here, once when the role starts waiting, so the caller logs
// nothing of it; any other outcome, nil or not, means the database
// answered and ends the role's wait.
func (p *Process) Pass(role string, err error) bool {
	if p == nil {
		return false
	}
	now := p.clk.Now()
	away := store.Unreachable(err)
	p.mu.Lock()
	defer p.mu.Unlock()
	since, was := p.waiting[role]
	switch {
	case away && !was:
		p.waiting[role] = now
		p.log.Warn("database unreachable: waiting for it", "role", role, "err", err)
	case !away && was:
		delete(p.waiting, role)
		waited := now.Sub(since)
		p.log.Info("database reachable again", "role", role, "waited", waited.Round(time.Millisecond))
		if p.m != nil {
			p.m.DatabaseWait.WithLabelValues(role).Add(waited.Seconds())
		}
	}
	if p.m != nil {
		up := 1.0
		if len(p.waiting) > 0 {
			up = 0
		}
		p.m.DatabaseUp.Set(up)
	}
	return away
}
