package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The pause of the steady scenario (SteadyConfig.Pause): after the window,
// serve is stopped and the world made to look as if Pause had passed
// (shiftStore moves the store's clock back, the farms publish what Pause
// would have let them), then serve starts again and catchUp follows its
// backlog until every overdue feed has been polled.

// catchUpCadences is how long catchUp waits at most beyond the poller's spread
// window (10 min), in cadences.
const catchUpCadences = 3

// catchUpSpread is the poller's default spread window after downtime.
const catchUpSpread = 10 * time.Minute

// CatchUp is what the catch-up after a pause measured; times are seconds
// from serve's restart (-1: not reached before the limit).
type CatchUp struct {
	PauseS    float64 `json:"pause_s"`
	Backlog   int64   `json:"backlog_feeds"`            // overdue at the restart
	Published int     `json:"feeds_published_in_pause"` // feeds with a new post
	// P99S is when 99 % of the backlog had been polled: lag p99 (against
	// the due times before the restart) back under one cadence. AllS is
	// when every overdue feed had been.
	P99S        float64 `json:"lag_p99_under_cadence_after_s"`
	AllS        float64 `json:"all_polled_after_s"`
	BacklogRate float64 `json:"backlog_feeds_per_s"` // Backlog / AllS
	Window      float64 `json:"window_s"`            // from /healthz to AllS (or the limit)
	PollsDone   float64 `json:"polls_per_s"`
	Polls       int64   `json:"polls"`
	OK          int64   `json:"polls_200_new"`
	LagP99      float64 `json:"metric_lag_p99_s"` // feedmail_poll_lag_seconds: against next_poll_at after the spread
	ServeCPU    float64 `json:"serve_cpu_ms_per_poll"`
	PGCPU       float64 `json:"pg_backends_cpu_ms_per_poll"`
	// OrderCorr is the correlation of a feed's due time with its first poll
	// after the restart; OutOfOrder the share of those polls that went to a
	// feed due later than one still waiting after that second.
	OrderCorr     float64 `json:"order_correlation"`
	OutOfOrder    float64 `json:"out_of_order_share"`
	EmailsQueued  int64   `json:"emails_queued"`
	EmailsSent    int64   `json:"emails_sent"`
	OutboxOldestS float64 `json:"outbox_oldest_queued_max_s"` // longest a queued email was seen waiting
}

// pause stops serve, shifts the store back by Pause, lets the farms
// publish and starts serve again (nothing without a pause).
func (s *steady) pause(ctx context.Context) error {
	if s.cfg.Pause <= 0 {
		return nil
	}
	if err := s.stopServe(ctx); err != nil {
		return err
	}
	if err := s.shiftStore(ctx, s.cfg.Pause); err != nil {
		return err
	}
	n, err := s.publishPaused(ctx, s.cfg.Pause)
	if err != nil {
		return err
	}
	s.catch = &CatchUp{PauseS: s.cfg.Pause.Seconds(), Published: n}
	err = s.st.DB.WithContext(ctx).Raw(`SELECT count(*) FROM bench_catchup`).Scan(&s.catch.Backlog).Error
	if err != nil {
		return fmt.Errorf("count the backlog: %w", err)
	}
	s.restart = time.Now().UTC().Truncate(time.Second)
	return s.launchServe(ctx)
}

// shiftStore moves every time that says when something is due, or when a
// feed was last polled, back by d: as if serve had been stopped for d. It
// notes each overdue feed's due time in bench_catchup (a table of the
// run's own database) to follow the catch-up.
func (s *steady) shiftStore(ctx context.Context, d time.Duration) error {
	sec := d.Seconds()
	stmts := []string{
		`UPDATE feeds SET next_poll_at = next_poll_at - make_interval(secs => ?), last_polled_at = last_polled_at - make_interval(secs => ?),
  last_success_at = last_success_at - make_interval(secs => ?), last_new_item_at = last_new_item_at - make_interval(secs => ?),
  lease_owner = '', lease_until = NULL`,
		`UPDATE outbox SET next_attempt_at = next_attempt_at - make_interval(secs => ?), created_at = created_at - make_interval(secs => ?) WHERE state = 'queued'`,
		`UPDATE digests SET next_slot_at = next_slot_at - make_interval(secs => ?)`,
		`CREATE TABLE bench_catchup AS SELECT id, next_poll_at AS due, NULL::timestamptz AS first_at FROM feeds
  WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at < now()`,
		`ALTER TABLE bench_catchup ADD PRIMARY KEY (id)`,
	}
	for _, q := range stmts {
		args := make([]any, 0, 4)
		for range countArgs(q) {
			args = append(args, sec)
		}
		if err := s.st.DB.WithContext(ctx).Exec(q, args...).Error; err != nil {
			return fmt.Errorf("shift the store back %s: %w", d, err)
		}
	}
	return nil
}

// countArgs is the number of placeholders (?) in q.
func countArgs(q string) int {
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
		}
	}
	return n
}

// publishPaused asks each farm to publish in the share of its feeds that
// would have published during d (each at most once) and returns how many.
func (s *steady) publishPaused(ctx context.Context, d time.Duration) (int, error) {
	share := min(1, s.cfg.PublishShare*d.Seconds()/s.cfg.Cadence.Seconds())
	total := 0
	for i, base := range s.farmURLs {
		count := s.cfg.Feeds/s.cfg.Hosts + btoi(i < s.cfg.Feeds%s.cfg.Hosts)
		n := int(math.Round(share * float64(count)))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/_farm/publish?burst="+strconv.Itoa(n), nil)
		if err != nil {
			return total, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return total, fmt.Errorf("farm %d: publish the pause's posts: %w", i+1, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return total, fmt.Errorf("farm %d: publish the pause's posts: %s", i+1, resp.Status)
		}
		total += n
	}
	return total, nil
}

// catchUp follows serve's backlog after the pause, once a second, until
// every overdue feed has been polled since the restart or the limit
// passes, and fills rep.CatchUp.
func (s *steady) catchUp(ctx context.Context, rep *SteadyReport) error {
	c := s.catch
	if c == nil {
		return nil
	}
	rep.CatchUp = c
	c.P99S, c.AllS, c.OrderCorr, c.OutOfOrder, c.LagP99 = -1, -1, -1, -1, -1
	var backends, workers, vacuum pgCPU
	begin, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	limit := s.restart.Add(catchUpSpread + catchUpCadences*s.cfg.Cadence)
	err = s.every(ctx, limit, func(now time.Time) (bool, error) {
		b, w, v, err := pgPids(ctx, s.st, s.appName, s.dbName)
		backends.add(b)
		workers.add(w)
		vacuum.add(v)
		if err != nil {
			return false, err
		}
		waiting, err := s.markPolled(ctx, now)
		if err != nil {
			return false, err
		}
		at := now.Sub(s.restart).Seconds()
		if c.P99S < 0 && waiting*100 <= c.Backlog {
			c.P99S = at
		}
		if now.Second()%5 == 0 {
			var oldest sql.NullTime
			if err := s.st.DB.WithContext(ctx).Raw(`SELECT min(created_at) FROM outbox WHERE state = 'queued'`).Row().Scan(&oldest); err != nil {
				return false, fmt.Errorf("oldest queued email: %w", err)
			}
			if oldest.Valid {
				c.OutboxOldestS = max(c.OutboxOldestS, now.Sub(oldest.Time).Seconds())
			}
			s.cfg.Progress(fmt.Sprintf("catch-up: %.0f s, %d of %d overdue feeds still waiting", at, waiting, c.Backlog))
		}
		if waiting == 0 {
			c.AllS = at
			return true, nil
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
	c.fill(begin, end, backends, workers)
	if c.AllS < 0 {
		s.notes = append(s.notes, fmt.Sprintf("the catch-up had not ended %s after the restart", limit.Sub(s.restart)))
	}
	return s.catchUpOrder(ctx, c)
}

// markPolled notes at now the feeds of the backlog polled since the
// restart and returns how many still wait.
func (s *steady) markPolled(ctx context.Context, now time.Time) (int64, error) {
	db := s.st.DB.WithContext(ctx)
	err := db.Exec(`UPDATE bench_catchup d SET first_at = ? FROM feeds f
  WHERE f.id = d.id AND d.first_at IS NULL AND f.last_polled_at >= ?`, now.UTC(), s.restart).Error
	if err != nil {
		return 0, fmt.Errorf("note the feeds polled: %w", err)
	}
	var waiting int64
	if err := db.Raw(`SELECT count(*) FROM bench_catchup WHERE first_at IS NULL`).Scan(&waiting).Error; err != nil {
		return 0, fmt.Errorf("count the feeds waiting: %w", err)
	}
	return waiting, nil
}

// fill computes the catch-up's rates and costs from its two snapshots.
func (c *CatchUp) fill(begin, end snap, backends, workers pgCPU) {
	el := end.at.Sub(begin.at).Seconds()
	c.Window = el
	polls := end.m.sum("feedmail_polls_total") - begin.m.sum("feedmail_polls_total")
	c.Polls = int64(polls)
	c.PollsDone = polls / el
	c.OK = int64(end.m.sum("feedmail_polls_total", `outcome="ok"`) - begin.m.sum("feedmail_polls_total", `outcome="ok"`))
	c.LagP99 = finite(quantile(0.99, begin.m.buckets("feedmail_poll_lag_seconds"), end.m.buckets("feedmail_poll_lag_seconds")))
	c.ServeCPU, c.PGCPU = -1, -1
	if polls > 0 {
		c.ServeCPU = float64(end.cpu-begin.cpu) / float64(time.Millisecond) / polls
		c.PGCPU = float64(backends.total+workers.total) / float64(time.Millisecond) / polls
	}
	c.EmailsQueued = end.outboxID - begin.outboxID
	c.EmailsSent = int64(end.sent - begin.sent)
	if c.AllS > 0 {
		c.BacklogRate = float64(c.Backlog) / c.AllS
	}
}

// dueFirst is one feed of the backlog: when it was due and when it was
// first polled after the restart (zero: not yet).
type dueFirst struct {
	Due, First time.Time
}

// catchUpOrder reads the backlog's due and first-poll times and computes
// how closely the polls followed the due order.
func (s *steady) catchUpOrder(ctx context.Context, c *CatchUp) error {
	rows, err := s.st.DB.WithContext(ctx).Raw(`SELECT due, first_at FROM bench_catchup`).Rows()
	if err != nil {
		return fmt.Errorf("read the catch-up's order: %w", err)
	}
	defer rows.Close()
	var v []dueFirst
	for rows.Next() {
		var d dueFirst
		var first sql.NullTime
		if err := rows.Scan(&d.Due, &first); err != nil {
			return fmt.Errorf("read the catch-up's order: %w", err)
		}
		d.First = first.Time // zero when NULL
		v = append(v, d)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the catch-up's order: %w", err)
	}
	c.OrderCorr, c.OutOfOrder = pollOrder(v)
	return nil
}

// pollOrder returns the correlation between due times and first polls
// (over the polled feeds; NaN as -1) and the share of polled feeds that
// were polled while a feed due before them still waited after that
// second: 0 when the oldest due always went first.
func pollOrder(v []dueFirst) (corr, outOfOrder float64) {
	polled := slices.DeleteFunc(slices.Clone(v), func(d dueFirst) bool { return d.First.IsZero() })
	if len(polled) == 0 {
		return -1, -1
	}
	// waitingMin: the earliest due among the feeds never polled.
	waitingMin := time.Time{}
	for _, d := range v {
		if d.First.IsZero() && (waitingMin.IsZero() || d.Due.Before(waitingMin)) {
			waitingMin = d.Due
		}
	}
	slices.SortFunc(polled, func(a, b dueFirst) int { return b.First.Compare(a.First) }) // latest first
	late, i := 0, 0
	for i < len(polled) {
		j := i
		for j < len(polled) && polled[j].First.Equal(polled[i].First) {
			j++
		}
		for _, d := range polled[i:j] {
			if !waitingMin.IsZero() && d.Due.After(waitingMin) {
				late++
			}
		}
		for _, d := range polled[i:j] {
			if waitingMin.IsZero() || d.Due.Before(waitingMin) {
				waitingMin = d.Due
			}
		}
		i = j
	}
	return finite(pearson(polled)), float64(late) / float64(len(polled))
}

// pearson is the correlation of due and first-poll times.
func pearson(v []dueFirst) float64 {
	var sx, sy, sxx, syy, sxy float64
	t0 := v[0].Due
	for _, d := range v {
		x, y := d.Due.Sub(t0).Seconds(), d.First.Sub(t0).Seconds()
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	n := float64(len(v))
	return (n*sxy - sx*sy) / math.Sqrt((n*sxx-sx*sx)*(n*syy-sy*sy))
}

// writeCatchUp adds the catch-up's rows to the report's table.
func (r *SteadyReport) writeCatchUp(row func(k, format string, a ...any)) {
	c := r.CatchUp
	row("CATCH-UP after a pause of", "%s: %d feeds overdue at the restart, %d with a new post", interval(c.PauseS), c.Backlog, c.Published)
	row("  lag p99 under a cadence", "%s after the restart (99 %% of the backlog polled)", interval(c.P99S))
	row("  every overdue feed polled", "%s after the restart (%s feeds/s of backlog)", interval(c.AllS), perSec(c.BacklogRate))
	row("  polls", "%.1f polls/s over %.0f s (%d polls, %s 200 new body)", c.PollsDone, c.Window, c.Polls, pct(c.OK, c.Polls))
	row("  feedmail / Postgres CPU", "%s + %s per poll", ms(c.ServeCPU), ms(c.PGCPU))
	if b := r.Bare; b != nil && b.CPU > 0 && c.ServeCPU > 0 {
		row("  feedmail ÷ bare", "%.1f× CPU per poll (%.1f× with Postgres; bare loop %s/request)", c.ServeCPU/b.CPU, (c.ServeCPU+max(c.PGCPU, 0))/b.CPU, ms(b.CPU))
	}
	row("  order", "correlation %.3f of due time and poll; %.1f %% of polls went to a feed due later than one still waiting", c.OrderCorr, 100*c.OutOfOrder)
	row("  metric lag p99", "%s (against next_poll_at after the spread)", secs(c.LagP99))
	row("  outbox", "%d emails queued, %d sent; the oldest queued waited at most %s", c.EmailsQueued, c.EmailsSent, interval(c.OutboxOldestS))
}

// CatchUpLine states the catch-up in one line.
func (r *SteadyReport) CatchUpLine() string {
	c := r.CatchUp
	bare := "—"
	if r.Bare != nil {
		bare = ms(r.Bare.CPU)
	}
	return fmt.Sprintf("after a %s pause, %d overdue feeds: lag p99 back under the %s cadence after %s, all polled after %s (%s feeds/s), %.1f polls/s at %s + %s CPU per poll (bare loop %s/request), order correlation %.3f (%.1f %% out of order), %d emails sent meanwhile (oldest queued waited ≤ %s)",
		interval(c.PauseS), c.Backlog, r.Cadence, interval(c.P99S), interval(c.AllS), perSec(c.BacklogRate), c.PollsDone, ms(c.ServeCPU), ms(c.PGCPU),
		bare, c.OrderCorr, 100*c.OutOfOrder, c.EmailsSent, interval(c.OutboxOldestS))
}
