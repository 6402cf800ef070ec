package poller

import (
	"context"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// acquire takes a request slot of f's host and then, for a poll of pass q
// (nil: a poll on its own, PollFeed's), one of the poller's
// Config.Concurrency fetch slots. The order is the point: a feed waiting
// for a busy host holds no fetch slot, so the feeds of other hosts go
// ahead of it. (Taking the fetch slot first, workers waiting for a host
// whose slots hung requests held left every other host unpolled until
// the hangs ended.) Both waits end by the lease's budget, since a fetch
// begun later could outlast the lease and another process fetch the feed
// too. It returns the release of both slots, or nil and why it gave up
// (a give-back's label).
func (p *Poller) acquire(ctx context.Context, f *store.Feed, host string, now time.Time, q *runningPass) (func(), string) {
	w := p.newSlotWait(ctx, f, now)
	defer w.cancel()
	var releaseHost func()
	ok := false
	if ctx.Err() == nil {
		releaseHost, ok = p.limiter.TryAcquire(host)
	}
	if !ok {
		q.waitingHost(1)
		p.countSlot(slotWaitingHost, 1)
		var err error
		releaseHost, err = p.limiter.Acquire(w.context(), host)
		p.countSlot(slotWaitingHost, -1)
		q.waitingHost(-1)
		if err != nil {
			return nil, w.why(giveBackHostBusy)
		}
	}
	if q == nil {
		return releaseHost, ""
	}
	select {
	case p.fetchSlots <- struct{}{}:
	default:
		p.countSlot(slotWaitingFetch, 1)
		got := false
		select {
		case p.fetchSlots <- struct{}{}:
			got = true
		case <-w.context().Done():
		}
		p.countSlot(slotWaitingFetch, -1)
		if !got {
			releaseHost()
			return nil, w.why(giveBackSlotsBusy)
		}
	}
	p.countSlot(slotFetching, 1)
	return sync.OnceFunc(func() {
		p.countSlot(slotFetching, -1)
		<-p.fetchSlots
		releaseHost()
	}), ""
}

// slotWait bounds acquire's waits by the lease's budget: until the lease
// leaves just the fetch timeout and a margin. Its context is made on the
// first wait only, so a poll whose slots are free makes no timer.
type slotWait struct {
	parent context.Context
	budget time.Duration // <= 0: the lease leaves no time; no lease: no bound
	lease  bool
	ctx    context.Context
	stop   context.CancelFunc
}

func (p *Poller) newSlotWait(ctx context.Context, f *store.Feed, now time.Time) *slotWait {
	w := &slotWait{parent: ctx}
	w.budget, w.lease = p.leaseBudget(f, now)
	return w
}

// leaseBudget is how long claimed feed f may still wait before its fetch
// at now: until its lease leaves just the fetch timeout and leaseMargin
// (negative: too late to fetch). ok is false for a feed without a lease
// (no bound).
func (p *Poller) leaseBudget(f *store.Feed, now time.Time) (budget time.Duration, ok bool) {
	if f.LeaseUntil == nil {
		return 0, false
	}
	return f.LeaseUntil.Sub(now) - p.client.Config().Timeout - leaseMargin, true
}

// leaseMargin is what a poll keeps of its lease beyond the fetch timeout,
// for writing its result.
const leaseMargin = 5 * time.Second

// context is the waits' context, made on first use.
func (w *slotWait) context() context.Context {
	if w.ctx == nil {
		w.ctx, w.stop = w.parent, func() {}
		if w.lease {
			w.ctx, w.stop = context.WithTimeout(w.parent, w.budget)
		}
	}
	return w.ctx
}

// why names a give-back after a wait ended: stopping when the poller's
// own context ended, busy (the wait's kind) when the budget ran out.
func (w *slotWait) why(busy string) string {
	if w.parent.Err() != nil {
		return giveBackStopping
	}
	return busy
}

func (w *slotWait) cancel() {
	if w.stop != nil {
		w.stop()
	}
}

// The states of feedmail_poll_slots.
const (
	slotFetching     = "fetching"
	slotWaitingHost  = "waiting_host"
	slotWaitingFetch = "waiting_fetch"
)

// countSlot moves the feedmail_poll_slots gauge of state by d.
func (p *Poller) countSlot(state string, d float64) {
	if p.m != nil {
		p.m.PollSlots.WithLabelValues(state).Add(d)
	}
}
