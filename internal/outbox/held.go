package outbox

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// MailEventsKeep is how long mail_events (the judged failures and
// complaints `feedmail mail health` reads) are kept; pruneBatch bounds
// how many one look deletes.
const (
	MailEventsKeep = 90 * 24 * time.Hour
	pruneBatch     = 5000
)

// expireHeld ends the pauses whose end has come (queuing again the email
// they held) and held rows older than HoldFor, and prunes mail events
// older than MailEventsKeep (and destination streaks long over), at most
// once a minute of the clock's time.
func (o *Outbox) expireHeld(ctx context.Context, now time.Time) error {
	o.mu.Lock()
	due := o.lastExpire.IsZero() || now.Sub(o.lastExpire) >= time.Minute || now.Before(o.lastExpire)
	if due {
		o.lastExpire = now
	}
	o.mu.Unlock()
	if !due {
		return nil
	}
	if n, err := o.cfg.Store.EndPauses(ctx); err != nil {
		return err
	} else if n > 0 {
		o.cfg.Log.Info("pauses ended", "count", n)
	}
	if n, err := o.cfg.Store.PruneMailRecords(ctx, now.Add(-MailEventsKeep), now.Add(-destinationForget), pruneBatch); err != nil {
		o.cfg.Log.Warn("prune mail events", "err", err)
	} else if n > 0 {
		o.cfg.Log.Info("old mail events pruned", "count", n)
	}
	for {
		rows, err := o.cfg.Store.ExpireHeld(ctx, now, o.cfg.HoldFor, 500)
		for _, r := range rows {
			o.count(r.Kind, "expired")
		}
		if len(rows) > 0 {
			o.cfg.Log.Info("held email expired", "count", len(rows))
		}
		if err != nil || len(rows) < 500 {
			return err
		}
	}
}

// holdBouncing settles a row to an address marked bouncing: it waits,
// held, until the mark is cleared (store.ClearBouncing).
func (o *Outbox) holdBouncing(ctx context.Context, j *job) {
	j.done = true
	if ok, err := o.cfg.Store.HoldOutbox(ctx, o.cfg.Owner, j.row.ID, store.HoldBouncing); err != nil {
		o.cfg.Log.Error("hold for bouncing address", "outbox", j.row.ID, "err", err)
	} else if ok {
		o.count(j.row.Kind, "held")
	}
}
