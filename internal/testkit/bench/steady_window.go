package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// every calls fn about once a second until until, fn says stop, ctx ends
// or a child exits (its failure is the error). It only watches: the work
// it waits out is serve's.
func (s *steady) every(ctx context.Context, until time.Time, fn func(now time.Time) (stop bool, err error)) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, c := range append([]*child{s.serve}, s.farms...) {
			if c.exited() {
				return c.failure()
			}
		}
		now := time.Now()
		if !now.Before(until) {
			return nil
		}
		if stop, err := fn(now); stop || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// polls is the number of polls serve recorded, from a scrape (-1 when the
// scrape failed).
func (s *steady) polls(ctx context.Context) float64 {
	m, err := scrape(ctx, s.base)
	if err != nil {
		return -1
	}
	return m.sum("feedmail_polls_total")
}

// warmUp lets serve run for the warm-up from the moment the first feed
// came due, then, for at most one more cadence, until every feed has had
// its first (cold) poll, so that the window sees the steady state. What
// it waited, or that the first round did not end, goes into the notes.
func (s *steady) warmUp(ctx context.Context) error {
	if s.cfg.Warmup < 0 && s.cfg.WarmStart {
		s.notes = append(s.notes, "no warm-up: the window starts with serve, after the warm start's first polls")
		return nil
	}
	if s.cfg.Warmup < 0 {
		s.notes = append(s.notes, "no warm-up: the window includes the first (cold) polls")
		return nil
	}
	end := s.t0.Add(s.cfg.Warmup)
	n := float64(s.cfg.Feeds)
	limit := end.Add(s.cfg.Cadence)
	if s.cfg.WarmStart {
		n = 0 // every feed had its first poll before serve started
	} else {
		limit = end.Add(max(s.cfg.Cadence, s.cfg.Warmup) + settleCadences*s.cfg.Cadence) // a first round may outlast the warm-up
	}
	var polls float64
	err := s.every(ctx, limit, func(now time.Time) (bool, error) {
		cold := !s.cfg.WarmStart
		look := now.Second()%5 == 0 || !now.Before(end)
		if cold && s.first.ended.IsZero() {
			look = now.Unix()%firstRoundLook(s.cfg.Feeds) == 0
		}
		if !look {
			return false, nil
		}
		polls = s.polls(ctx)
		ready := polls >= n
		if cold {
			if err := s.watchFirstRound(ctx, now); err != nil {
				return false, err
			}
			ready = !s.first.steadyAt.IsZero() && !now.Before(s.first.ended.Add(settleCadences*s.cfg.Cadence))
		}
		s.cfg.Progress(fmt.Sprintf("warm-up: %.0f/%.0f s, %.0f polls, %d feeds never polled", now.Sub(s.t0).Seconds(), s.cfg.Warmup.Seconds(), polls, s.first.unpolled))
		return !now.Before(end) && ready, nil
	})
	if err != nil {
		return err
	}
	switch over := time.Since(end); {
	case polls < n:
		s.notes = append(s.notes, fmt.Sprintf("the first round had not ended %s after the warm-up (%.0f of %d feeds polled): the window includes first polls",
			limit.Sub(end), max(polls, 0), s.cfg.Feeds))
	case over >= 2*time.Second:
		s.notes = append(s.notes, fmt.Sprintf("warm-up extended by %s until every feed had had its first poll and the run was steady", over.Round(time.Second)))
	}
	return nil
}

// firstRoundLook returns how many seconds apart a cold run counts the
// feeds not polled yet: every second, but every 10 s from 100,000 feeds,
// since the count scans the feeds table and at a million feeds a scan a
// second took a third of a core, as much as a third of serve's own.
func firstRoundLook(feeds int) int64 {
	if feeds >= 100_000 {
		return 10
	}
	return 1
}

// settleCadences is how many cadences after the first round a cold run's
// window waits at least: a first poll's next one is up to two intervals
// on (the poller spreads it over one), so only then has every feed had its
// second poll and the polls their steady pace.
const settleCadences = 2

// snap is what the window reads at its start and end.
type snap struct {
	at       time.Time
	m        series
	cpu      time.Duration // serve's
	sent     int           // emails the sink received
	outboxID int64         // the highest outbox id: emails queued so far
	iv       []bucket      // the farms' intervals between requests for a feed; nil if unread
}

// snapshot reads serve's metrics and CPU, the sink and the outbox.
func (s *steady) snapshot(ctx context.Context) (snap, error) {
	var sn snap
	var err error
	if sn.m, err = scrape(ctx, s.base); err != nil {
		return sn, err
	}
	sn.at = time.Now()
	if sn.cpu, err = procCPU(s.serve.pid()); err != nil {
		return sn, fmt.Errorf("serve's CPU: %w", err)
	}
	sn.sent = s.sink.Count()
	if sn.iv, err = s.farmIntervals(ctx); err != nil {
		s.cfg.Log.Warn("steady: reading the farms' poll intervals", "err", err)
	}
	err = s.st.DB.WithContext(ctx).Raw("SELECT COALESCE(MAX(id), 0) FROM outbox").Scan(&sn.outboxID).Error
	return sn, err
}

// window measures Window of serve's steady state: CPU of serve and of its
// Postgres backends, memory, the metrics' deltas, emails.
func (s *steady) window(ctx context.Context, rep *SteadyReport) error {
	pid := s.serve.pid()
	var backends, workers, vacuum pgCPU
	samplePG := func() error {
		b, w, v, err := pgPids(ctx, s.st, s.appName, s.dbName)
		backends.add(b)
		workers.add(w)
		vacuum.add(v)
		return err
	}
	_, hwm, _ := procMem(pid)
	rep.Memory.PeakRunBytes = hwm
	if !clearPeak(pid) {
		s.notes = append(s.notes, "could not reset serve's VmHWM: the window's peak is the run's")
	}
	if err := samplePG(); err != nil {
		return fmt.Errorf("find serve's Postgres backends: %w", err)
	}
	begin, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	var rss []int64
	err = s.every(ctx, begin.at.Add(s.cfg.Window), func(now time.Time) (bool, error) {
		if r, _, err := procMem(pid); err == nil {
			rss = append(rss, r)
		}
		if err := samplePG(); err != nil {
			return false, err
		}
		if now.Second()%5 == 0 {
			p := s.polls(ctx) - begin.m.sum("feedmail_polls_total")
			el := now.Sub(begin.at).Seconds()
			s.cfg.Progress(fmt.Sprintf("window: %.0f/%.0f s, %.0f polls (%.1f/s)", el, s.cfg.Window.Seconds(), p, p/max(el, 1)))
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	end, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	if err := samplePG(); err != nil {
		return err
	}
	_, rep.Memory.PeakWindowBytes, _ = procMem(pid)
	rep.Memory.SteadyBytes = median(rss)
	rep.fill(begin, end, backends, workers, vacuum)
	return nil
}

// median is the middle of v (0 when empty).
func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// finite is v, or -1 for NaN and +Inf (JSON has neither).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return -1
	}
	return v
}
