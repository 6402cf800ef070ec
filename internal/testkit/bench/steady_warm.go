package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// warmStartConns is the warm pass's connection pool: enough for the
// poller's workers and its writer.
const warmStartConns = Concurrency + 8

// warmStart does the first round the fast way, before serve starts
// (SteadyConfig.WarmStart): one batch pass of the real poller, in this
// process, over every feed, so that each feed holds what its first poll
// leaves (validators, every item known, poll state) without serve's first
// round, which at a million feeds outlasts a session. The poller's clock
// stands still at the pass's start, so a feed polled early does not come
// due again before the pass ends; spread then sets when each feed is next
// due. It returns an error unless every feed was polled once with a 200.
func (s *steady) warmStart(ctx context.Context) error {
	if !s.cfg.WarmStart {
		return nil
	}
	start := time.Now()
	now := start.UTC().Truncate(time.Second)
	err := s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = ?, poll_reason = 'bench steady: warm start'`,
		now.Add(-time.Second)).Error
	if err != nil {
		return fmt.Errorf("make the feeds due: %w", err)
	}
	u, err := url.Parse(s.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("%w: database URL: %v", ErrBadConfig, err)
	}
	st, err := store.Open(ctx, dbURL(u, s.dbName, "feedbench-warm-start"), store.Options{MaxOpenConns: warmStartConns})
	if err != nil {
		return fmt.Errorf("open the warm start's connections: %w", err)
	}
	defer st.Close()
	var polls atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	fc := fetcher.Config{BaseURL: benchBaseURL, AllowPrivate: true}
	if s.warmRetry {
		// A farm with faults hangs some requests until the client gives
		// up: the failed feeds are polled again, so do not wait long.
		fc.Timeout = 5 * time.Second
	}
	p, err := poller.New(poller.Config{
		Store: st, Fetch: fc, Clock: clock.NewFake(now),
		Log: s.cfg.Log.With("role", "warm-start poller"), Owner: fmt.Sprintf("bench-%d-warm-start", os.Getpid()),
		Concurrency: Concurrency,
		AfterPoll: func(ctx context.Context, ev poller.PollEvent) {
			if s.warmHook != nil {
				s.warmHook(ctx, ev)
			}
			polls.Add(1)
			mu.Lock()
			statuses[ev.Report.Status]++
			mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	defer p.Close()
	e := &env{cfg: Config{Log: s.cfg.Log, Progress: s.cfg.Progress}, st: s.st}
	stop := e.progress("warm start", func() string {
		n := polls.Load()
		return fmt.Sprintf("%d/%d feeds polled (%.0f/s)", n, s.cfg.Feeds, float64(n)/max(time.Since(start).Seconds(), 1))
	})
	n, err := p.PollDue(ctx)
	if err == nil && s.warmRetry {
		err = s.warmRetryFailed(ctx, p, now)
	}
	stop()
	if err != nil {
		return fmt.Errorf("warm start pass: %w", err)
	}
	if (n != s.cfg.Feeds && !s.warmRetry) || statuses[200] != s.cfg.Feeds {
		return checkf("warm start: %d feeds claimed, statuses %v; want %d × 200", n, statuses, s.cfg.Feeds)
	}
	// The pass left each feed due a poll interval after the pass's start:
	// when the pass outlasts that, serve would find feeds due at its start
	// and claim them while spread rewrites every row (a deadlock at
	// 500,000 feeds). They wait again, as after the seed, until spread.
	err = s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = ?, poll_reason = 'bench steady: waiting for the start'`,
		now.AddDate(1, 0, 0)).Error
	if err != nil {
		return fmt.Errorf("park the feeds until spread: %w", err)
	}
	took := time.Since(start)
	s.notes = append(s.notes, fmt.Sprintf("warm start: serve did not poll any feed first; a batch pass of the poller in feedbench polled all %d feeds once (%d × 200) in %s (%.0f feeds/s) before serve started",
		s.cfg.Feeds, statuses[200], took.Round(time.Second), float64(n)/took.Seconds()))
	return e.analyze(ctx)
}

// warmRetryFailed polls again, up to 20 more passes, the feeds whose warm
// poll failed (a farm with faults), until every one has had its 200.
func (s *steady) warmRetryFailed(ctx context.Context, p *poller.Poller, now time.Time) error {
	for range 20 {
		res := s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = ? WHERE consecutive_errors > 0`, now.Add(-time.Second))
		if res.Error != nil {
			return fmt.Errorf("make the failed feeds due: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		if _, err := p.PollDue(ctx); err != nil {
			return err
		}
	}
	return nil
}
