package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// window injects the faults for Window from now.
func (c *chaos) window(ctx context.Context) error {
	c.w0 = time.Now()
	c.w1 = c.w0.Add(c.cfg.Window)
	plan := planFaults(c.cfg.Seed, c.cfg.Window, c.cfg.KillEvery, c.cfg.PGEvery, c.cfg.Processes)
	if err := c.publishing(ctx, true); err != nil {
		return err
	}
	c.cfg.Log.Info("chaos: window", "from", c.w0.UTC().Format(time.RFC3339), "until", c.w1.UTC().Format(time.RFC3339),
		"faults planned", len(plan))
	if err := c.runFaults(ctx, plan); err != nil {
		return err
	}
	return c.publishing(ctx, false)
}

// drain stops the kills and cluster restarts and waits, for at most
// Drain (and inFlightGrace more for copies then in flight, see
// drainDone), until every expected delivery has arrived. The SMTP and webhook
// faults stay on for one more cadence, until every post of the window has
// been fetched, so that every send meets them; then new SMTP connections
// and webhooks go to the clean receivers. Feeds held back by an error penalty (at least
// 15 min) are made due every 30 s, as an operator would after an outage,
// so that the drain need not wait the penalty out; the report says how
// many. The serves are still watched (and started again should one exit).
func (c *chaos) drain(ctx context.Context) error {
	start := time.Now()
	calmAt := start.Add(DefaultCadence + 30*time.Second)
	deadline := start.Add(c.cfg.Drain)
	var lastPoke time.Time
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		c.watch(ctx, nil)
		if !time.Now().Before(calmAt) {
			c.smtpFwd.calm()
			c.hooks.calm()
		}
		if time.Since(lastPoke) >= 30*time.Second {
			c.rep.PenaltyPokes += c.pokePenalized(ctx)
			lastPoke = time.Now()
		}
		ps, err := c.posts(ctx)
		if err != nil {
			return err
		}
		recs, _, _ := c.rec.snapshot()
		v := judge(ps, c.readers, recs, c.faults, time.Now())
		c.cfg.Progress(fmt.Sprintf("drain: %.0f s, %d of %d expected deliveries in, %d in flight", time.Since(start).Seconds(),
			v.Delivered, v.Expected, v.Pending))
		if drainDone(v, time.Now(), deadline) {
			c.rep.Drained = time.Since(start).Round(time.Second).String()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// drainDone reports whether the drain stops at now: everything expected
// is in; or the deadline has passed and no missing copy is in flight (its
// post reached another reader less than inFlightGrace ago: a digest
// reader's copy waits for the next slot); or inFlightGrace has passed
// since the deadline too. Without the grace, a drain cut by its deadline
// would call lost the digest copies of every post polled in its last
// minute, whose instant copies had arrived.
func drainDone(v verdict, now, deadline time.Time) bool {
	switch {
	case v.Lost+v.Pending == 0:
		return true
	case now.Before(deadline):
		return false
	default:
		return v.Pending == 0 || !now.Before(deadline.Add(inFlightGrace))
	}
}

// pokePenalized makes due now every feed waiting out an error penalty
// (consecutive errors, next poll more than a cadence away) and returns how
// many.
func (c *chaos) pokePenalized(ctx context.Context) int {
	res := c.s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = now(), poll_reason = 'bench chaos: drain'
WHERE consecutive_errors > 0 AND next_poll_at > now() + interval '1 minute'`)
	if res.Error != nil {
		c.cfg.Log.Warn("chaos: making penalized feeds due", "err", res.Error)
		return 0
	}
	return int(res.RowsAffected)
}

// judge runs the oracle and the ledger check into the report.
func (c *chaos) judge(ctx context.Context) error {
	ps, err := c.posts(ctx)
	if err != nil {
		return err
	}
	recs, bad, _ := c.rec.snapshot()
	v := judge(ps, c.readers, recs, c.faults, time.Now())
	c.rep.fill(c, v, len(ps), bad)
	if c.rep.LostWhy, err = c.explainLost(ctx, v.LostList, ps); err != nil {
		c.cfg.Log.Warn("chaos: explaining the losses", "err", err)
	}
	c.rep.TwiceWhy = explainTwice(v.TwiceList, recs, c.faults)
	if err := c.pipelineLag(ctx, v); err != nil {
		return err
	}
	ch, err := c.charges(ctx, recs)
	if err != nil {
		return err
	}
	c.rep.Charges = ch
	if c.rep.Feed, err = c.farmFaultCounts(ctx); err != nil {
		return err
	}
	c.rep.Hooks = c.hooks.back[0].Counts()
	c.rep.HookRepliesLost = c.hooks.repliesLost()
	c.rep.Notes = append(c.rep.Notes, c.notes...)
	c.rep.Failed = c.rep.failures()
	return nil
}

// bareLoop runs steady's paced bare loop with the serves stopped, for the
// machine's yardstick beside the figures.
func (c *chaos) bareLoop(ctx context.Context) error {
	if c.cfg.Bare < 0 {
		return nil
	}
	var sr SteadyReport
	if err := c.s.bareLoop(ctx, &sr); err != nil {
		return err
	}
	c.rep.Bare = sr.Bare
	return nil
}

// pipelineLag is the lag from the poll that first saw a post (items.seen_at:
// feedmail's own record, used for this split only) to its first copy's
// acceptance: the part of the lag that is not waiting for the next poll.
func (c *chaos) pipelineLag(ctx context.Context, v verdict) error {
	var rows []struct {
		Link   string
		SeenAt time.Time
	}
	err := c.s.st.DB.WithContext(ctx).Raw(`SELECT link, seen_at FROM items WHERE seen_at >= ?`, c.w0.Add(-time.Minute)).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("read when the items were seen: %w", err)
	}
	seen := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		seen[r.Link] = r.SeenAt
	}
	var all, calmLag []time.Duration
	for _, f := range v.Firsts {
		at, ok := seen[f.Link]
		if !ok {
			continue
		}
		d := max(f.At.Sub(at), 0)
		all = append(all, d)
		if calm(f.At, c.faults) {
			calmLag = append(calmLag, d)
		}
	}
	slices.Sort(all)
	slices.Sort(calmLag)
	sec := func(d time.Duration) float64 { return d.Round(100 * time.Millisecond).Seconds() }
	c.rep.SeenLagP50, c.rep.SeenLagP99 = sec(durQuantile(all, 0.5)), sec(durQuantile(all, 0.99))
	c.rep.SeenCalmP50, c.rep.SeenCalmP99 = sec(durQuantile(calmLag, 0.5)), sec(durQuantile(calmLag, 0.99))
	return nil
}
