package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"
)

// faultEvent is one step of the fault schedule, at an offset into the
// window: kill serve Serve (restarted Down later) or restart the cluster
// (down for Down).
type faultEvent struct {
	At    time.Duration
	Kind  string
	Serve int
	Down  time.Duration
}

// planFaults returns the window's fault schedule from seed, in time order:
// a kill about every killEvery (±30 %) of a random one of procs serves,
// each restarted 3–8 s later; a cluster restart every pgEvery, or one in
// the middle of a window shorter than twice that.
func planFaults(seed int64, window, killEvery, pgEvery time.Duration, procs int) []faultEvent {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	var ev []faultEvent
	for k := 1; ; k++ {
		at := time.Duration((float64(k) + 0.6*r.Float64() - 0.3) * float64(killEvery))
		if at >= window-5*time.Second {
			break
		}
		ev = append(ev, faultEvent{At: at, Kind: faultKill, Serve: r.IntN(procs),
			Down: 3*time.Second + time.Duration(r.Float64()*float64(5*time.Second))})
	}
	pg := []time.Duration{window / 2}
	if window >= 2*pgEvery {
		pg = nil
		for at := pgEvery; at < window; at += pgEvery {
			pg = append(pg, at)
		}
	}
	for _, at := range pg {
		ev = append(ev, faultEvent{At: at, Kind: faultPG, Down: 2 * time.Second})
	}
	slices.SortStableFunc(ev, func(a, b faultEvent) int { return int(a.At - b.At) })
	return ev
}

// pending is a serve to start again at a time.
type pending struct {
	at    time.Time
	serve int
}

// runFaults injects the schedule from w0 until w1, watching the serves
// each second: an exit the bench did not cause is noted and the serve
// started again.
func (c *chaos) runFaults(ctx context.Context, plan []faultEvent) error {
	var restarts []pending
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		now := time.Now()
		for len(plan) > 0 && !now.Before(c.w0.Add(plan[0].At)) {
			restarts = append(restarts, c.inject(ctx, plan[0])...)
			plan = plan[1:]
		}
		var keep []pending
		for _, p := range restarts {
			if now.Before(p.at) {
				keep = append(keep, p)
				continue
			}
			c.restart(ctx, c.serves[p.serve])
		}
		restarts = keep
		c.watch(ctx, restarts)
		if !now.Before(c.w1) && len(restarts) == 0 {
			return nil
		}
		c.cfg.Progress(fmt.Sprintf("window: %.0f/%.0f s, %d faults, %d messages in",
			now.Sub(c.w0).Seconds(), c.w1.Sub(c.w0).Seconds(), len(c.faults), c.received()))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// received is how many messages the sinks and the receiver took in.
func (c *chaos) received() int {
	_, _, n := c.rec.snapshot()
	return n
}

// inject applies one fault and returns the serve to start again, if any.
func (c *chaos) inject(ctx context.Context, ev faultEvent) []pending {
	now := time.Now()
	switch ev.Kind {
	case faultKill:
		sp := c.serves[ev.Serve]
		if sp.c == nil || sp.c.exited() {
			return nil
		}
		c.sampleCPU()
		pid := sp.c.pid()
		_ = sp.c.cmd.Process.Signal(syscall.SIGKILL)
		<-sp.c.done
		sp.cpu += sp.last
		sp.last = 0
		sp.kills++
		c.logFault(fault{Kind: faultKill, At: now, Detail: fmt.Sprintf("%s (pid %d), restarted after %s", sp.name, pid, ev.Down.Round(100*time.Millisecond))})
		return []pending{{at: now.Add(ev.Down), serve: ev.Serve}}
	case faultPG:
		took, err := c.cluster.RestartImmediate(ctx, ev.Down)
		detail := fmt.Sprintf("stop -m immediate, down %s until it accepted connections again", took.Round(100*time.Millisecond))
		if err != nil {
			detail += "; " + err.Error()
		}
		c.logFault(fault{Kind: faultPG, At: now, Detail: detail})
	}
	return nil
}

// logFault records a fault for the report and logs it with its time.
func (c *chaos) logFault(f fault) {
	c.faults = append(c.faults, f)
	c.cfg.Log.Info("chaos: fault", "kind", f.Kind, "at", f.At.UTC().Format(time.RFC3339Nano), "detail", f.Detail)
}

// restart starts a serve again, trying a few times (it may find the
// cluster down); each failed start is noted.
func (c *chaos) restart(ctx context.Context, sp *serveProc) {
	for try := 1; try <= 5; try++ {
		err := c.startServe(ctx, sp)
		if err == nil {
			c.cfg.Log.Info("chaos: serve started again", "serve", sp.name, "pid", sp.c.pid())
			return
		}
		c.note(fmt.Sprintf("%s did not start again (try %d): %v", sp.name, try, firstLine(err)))
		if ctx.Err() != nil {
			return
		}
	}
}

// watch samples the serves' CPU and starts again, with a note, a serve
// that exited although the bench did not kill it.
func (c *chaos) watch(ctx context.Context, due []pending) {
	c.sampleCPU()
	for i, sp := range c.serves {
		if sp.c == nil || !sp.c.exited() || slices.ContainsFunc(due, func(p pending) bool { return p.serve == i }) {
			continue
		}
		sp.cpu += sp.last
		sp.last = 0
		sp.other++
		c.note(fmt.Sprintf("%s exited on its own: %v", sp.name, firstLine(sp.c.failure())))
		c.restart(ctx, sp)
	}
}

// note adds a line to the report's notes and the log.
func (c *chaos) note(s string) {
	c.notes = append(c.notes, s)
	c.cfg.Log.Warn("chaos: " + s)
}

// firstLine is err's message up to its first line break, at most 300 bytes.
func firstLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
