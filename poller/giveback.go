package poller

import (
	"context"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// giveBacks writes the feeds the workers give back together: a worker
// giving one back joins the batch being gathered and waits for it; the
// first to arrive writes it (store.DeferFeeds, one statement) and goes on
// writing whatever gathered meanwhile. So at a backlog, when many claimed
// feeds are given back at once (hosts busy, leases too short to fetch in),
// sixteen workers make one round trip instead of sixteen; one at a time,
// each costs what it did alone.
type giveBacks struct {
	mu      sync.Mutex
	queue   []pendingBack
	writing bool
}

// pendingBack is a give-back waiting for its batch's write.
type pendingBack struct {
	d    store.Deferral
	done chan error
}

// Why a claimed feed is given back without a request: the label of
// feedmail_poll_givebacks_total.
const (
	giveBackHostBusy   = "host_busy"
	giveBackSlotsBusy  = "slots_busy"
	giveBackLeaseShort = "lease_short"
	giveBackBackedOff  = "backed_off"
	giveBackStopping   = "stopping"
	giveBackDBError    = "db_error"
)

// giveBack returns a claimed feed without polling it, due at next with
// reason, once its batch is written; the feed is then no longer held.
func (p *Poller) giveBack(ctx context.Context, id int64, next time.Time, reason, why string) {
	if p.m != nil {
		p.m.PollGiveBacks.WithLabelValues(why).Inc()
	}
	done := make(chan error, 1)
	g := &p.backs
	g.mu.Lock()
	g.queue = append(g.queue, pendingBack{d: store.Deferral{ID: id, Next: next, Reason: reason}, done: done})
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		p.writeGiveBacks(ctx)
	}
	if err := <-done; err != nil {
		p.log.Warn("giving back a feed failed", "feed", id, "err", err)
		return
	}
	p.unhold(id)
}

// writeGiveBacks writes batches until none is waiting, retrying each
// through a database away for a moment.
func (p *Poller) writeGiveBacks(ctx context.Context) {
	g := &p.backs
	for {
		g.mu.Lock()
		batch := g.queue
		g.queue = nil
		if len(batch) == 0 {
			g.writing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		ds := make([]store.Deferral, len(batch))
		for i, b := range batch {
			ds[i] = b.d
		}
		wctx, cancel := pollWriteContext(ctx)
		_, err := store.RetryTransient(wctx, time.Minute, func(ctx context.Context) error {
			_, err := p.st.DeferFeeds(ctx, p.cfg.Owner, ds)
			return err
		})
		cancel()
		for _, b := range batch {
			b.done <- err
		}
	}
}
