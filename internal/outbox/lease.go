package outbox

import (
	"context"
	"sync"
	"time"
)

// keeper renews a pass's claim while the pass runs, so that the lease can
// be short: a worker killed mid-pass gives its rows up one Lease after its
// last renewal (not after the longest a pass may take), while a slow pass
// keeps its rows. Deadlines are on the wall clock, as the database's are.
//
// When renewals fail (the database is away), the lease last granted still
// bounds the send: it stops margin before that lease ends, so no row is
// handed over once another worker may have claimed it. Recording is not
// bounded by the lease: while the database is away nobody can claim the
// rows, and once it is back a mark or release of a row another worker took
// meanwhile is refused (each write names its owner), so writes recording
// work done are retried for recordFor, however short the lease.
type keeper struct {
	o      *Outbox
	ids    []int64
	every  time.Duration
	margin time.Duration // the send stops this long before the lease ends

	stopSend context.CancelFunc // ends the pass's sending

	mu  sync.Mutex
	end time.Time // wall-clock end of the lease last granted

	quit chan struct{}
	done chan struct{}
}

// renewEvery is how often a pass renews its lease: four times a lease, so
// that three renewals in a row may fail before the send must stop.
func renewEvery(lease time.Duration) time.Duration { return max(lease/4, 100*time.Millisecond) }

// sendMargin is how long before the lease ends the send stops.
func sendMargin(lease time.Duration) time.Duration { return min(lease/5, time.Minute) }

// keepLease starts renewing the lease of ids, granted until end, and
// returns the keeper with the send context it ends (derived from ctx).
// stop ends the keeper.
func (o *Outbox) keepLease(ctx context.Context, ids []int64, end time.Time) (k *keeper, send context.Context) {
	send, stopSend := context.WithCancel(ctx)
	k = &keeper{o: o, ids: ids, every: renewEvery(o.cfg.Lease), margin: sendMargin(o.cfg.Lease),
		stopSend: stopSend, end: end, quit: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k, send
}

// stop ends the renewals and the send context; the pass is over.
func (k *keeper) stop() {
	close(k.quit)
	<-k.done
	k.stopSend()
}

// run renews every k.every, and ends the send when the lease last granted
// comes within margin of its end.
func (k *keeper) run() {
	defer close(k.done)
	next := time.Now().Add(k.every)
	for {
		k.mu.Lock()
		stopAt := k.end.Add(-k.margin)
		k.mu.Unlock()
		if !time.Now().Before(stopAt) {
			k.stopSend()
			k.o.cfg.Log.Warn("outbox lease not renewed in time; the pass stops sending", "owner", k.o.cfg.Owner, "rows", len(k.ids), "stopped_at", stopAt)
			return
		}
		if !time.Now().Before(next) {
			k.renew()
			next = time.Now().Add(k.every)
			continue
		}
		t := time.NewTimer(time.Until(earliest(next, stopAt)))
		select {
		case <-k.quit:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// renew extends the lease of the rows still held; on success the end moves
// to one Lease from the moment the statement began. A failure is logged
// and the next tick tries again.
func (k *keeper) renew() {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), k.every)
	defer cancel()
	n, err := k.o.cfg.Store.RenewOutboxLease(ctx, k.o.cfg.Owner, k.ids, k.o.cfg.Lease, k.o.cfg.Clock.Now())
	k.o.cfg.Metrics.CountLeaseRenewal(err == nil)
	if err != nil {
		k.o.cfg.Log.Warn("renew outbox lease", "owner", k.o.cfg.Owner, "rows", len(k.ids), "err", err)
		return
	}
	k.mu.Lock()
	k.end = began.Add(k.o.cfg.Lease)
	k.mu.Unlock()
	k.o.cfg.Log.Debug("outbox lease renewed", "owner", k.o.cfg.Owner, "rows", n)
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
