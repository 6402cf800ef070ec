package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
)

// Tables is the order a pass walks the tables in: digest entries before
// the items they name, so an item is never deleted under a pending one.
var Tables = []store.RetainedTable{
	store.RetainPollLog, store.RetainDigestItems, store.RetainItems, store.RetainOutbox, store.RetainLedger,
}

// Batch is how many rows one read of a walk takes.
const Batch = 2000

// Pruner walks the tables and applies a Policy. It remembers, per table,
// the id up to which every row was judged, so an hourly pass reads only
// rows written since (plus the few kept); Restart forgets that, so rows
// kept once are judged again (a post whose feed has moved on since).
type Pruner struct {
	St     *store.Store
	Policy Policy
	Clock  clock.Clock
	Log    *slog.Logger

	after map[store.RetainedTable]int64
}

// Counts is what one pass did, per table.
type Counts map[store.RetainedTable]struct{ Read, Deleted, Cleared int64 }

// Pass judges every row of every table older than its keep, deletes the
// rate-limit counters that are full again, and returns what it did. It stops early, with what it did so far, when ctx ends or
// a statement fails.
func (p *Pruner) Pass(ctx context.Context) (Counts, error) {
	if p.after == nil {
		p.after = map[store.RetainedTable]int64{}
	}
	out := Counts{}
	now := p.Clock.Now()
	for _, t := range Tables {
		c, err := p.walk(ctx, t, now)
		out[t] = c
		if err != nil {
			return out, err
		}
	}
	// Rate-limit counters back to full are the same as none.
	n, err := p.St.PruneRateLimits(ctx, now)
	out[store.RetainRateLimits] = struct{ Read, Deleted, Cleared int64 }{Deleted: n}
	return out, err
}

// Restart makes the next pass start every table from its first row.
func (p *Pruner) Restart() { p.after = nil }

// walk judges t's rows from where the last walk stopped until the first
// row younger than its keep.
func (p *Pruner) walk(ctx context.Context, t store.RetainedTable, now time.Time) (c struct{ Read, Deleted, Cleared int64 }, err error) {
	for {
		rows, err := p.St.RetentionRows(ctx, t, p.after[t], Batch)
		if err != nil {
			return c, err
		}
		var del, clear []int64
		last, young := p.after[t], false
		for _, r := range rows {
			if !p.Policy.Old(t, r, now) {
				young = true
				break
			}
			last = r.ID
			c.Read++
			switch p.Policy.Decide(t, r) {
			case Delete:
				del = append(del, r.ID)
			case ClearContent:
				clear = append(clear, r.ID)
			}
		}
		n, err := p.St.DeleteRetained(ctx, t, del)
		c.Deleted += n
		if err != nil {
			return c, err
		}
		if len(clear) > 0 {
			n, err := p.St.ClearItemContent(ctx, clear)
			c.Cleared += n
			if err != nil {
				return c, err
			}
		}
		p.after[t] = last
		if young || len(rows) < Batch {
			return c, ctx.Err()
		}
	}
}

// Run makes a pass at once and then every interval (an hour in serve),
// starting each table from its first row again once a day, until ctx
// ends. A failed pass is logged and tried again at the next tick.
func (p *Pruner) Run(ctx context.Context, interval time.Duration) error {
	var restarted time.Time
	for {
		now := p.Clock.Now()
		if now.Sub(restarted) >= 24*time.Hour {
			p.Restart()
			restarted = now
		}
		c, err := p.Pass(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.report(c, err)
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// report logs a pass: what went, per table, when anything did.
func (p *Pruner) report(c Counts, err error) {
	if err != nil {
		p.Log.Warn("retention pass failed", "err", fmt.Errorf("retention: %w", err))
	}
	for _, t := range append(Tables, store.RetainRateLimits) {
		if n := c[t]; n.Deleted > 0 || n.Cleared > 0 {
			p.Log.Info("retention", "table", string(t), "deleted", n.Deleted, "cleared", n.Cleared)
		}
	}
}
