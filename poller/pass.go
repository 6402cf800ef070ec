package poller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// PollDue makes one pass over every feed due at the clock's now: it claims
// them in batches, polls them Config.Concurrency at a time and writes the
// results, and returns when all are written. n counts the feeds claimed
// (polled, or given back because their host is backed off). With a fake
// clock it is how simulations drive the poller without waiting.
func (p *Poller) PollDue(ctx context.Context) (n int, err error) {
	ps := p.startPass(ctx, p.clk.Now(), passBounds{})
	<-ps.done
	return ps.n, ps.err
}

// passBounds shapes one of Run's passes (PollDue's has none): it first
// claims the feeds due from recent on (those that came due since the
// previous pass began: feeds in steady state), then the older ones, oldest
// first (a backlog: an import's first polls, feeds late after downtime),
// and stops claiming after limit feeds, so that a backlog that takes
// minutes does not keep the next pass, and the feeds coming due meanwhile,
// waiting. The recent feeds get at most all but 1/backlogShare of limit
// when a backlog waits: on a machine too small for its feeds they would
// otherwise fill every pass and the backlog would never be polled.
type passBounds struct {
	recent time.Time // zero: oldest first from the start
	limit  int       // 0: no limit
}

// backlogShare: a bounded pass keeps at least 1/backlogShare of its limit
// for the backlog (see passBounds).
const backlogShare = 4

// startPass starts a pass over the feeds due at now within b (claimLoop)
// and returns at once. Its workers share the poller's Config.Concurrency
// fetch slots with every other pass running, so Run may start the next
// pass once this one is idle (its claims ended and fewer of its feeds are
// left to fetch than there are slots, not counting those waiting for a
// busy host) while a slow fetch of it finishes: one hung fetch no longer
// keeps the other slots empty until its timeout.
func (p *Poller) startPass(ctx context.Context, now time.Time, b passBounds) *runningPass {
	p.hmu.Lock()
	p.passes++
	p.hmu.Unlock()
	ps := &runningPass{idle: make(chan struct{}), done: make(chan struct{}), conc: p.cfg.Concurrency}
	w := p.newPollWriter(ctx)
	// free counts the places for feeds claimed and not finished. Each
	// claimed feed gets a goroutine of its own: a feed waiting for its
	// host's slot holds no fetch slot (acquire), so the feeds of other
	// hosts never wait behind it for a worker.
	free := newSlots(p.cfg.Batch)
	var wg sync.WaitGroup
	start := func(j claimedFeed) {
		wg.Go(func() {
			p.pollClaimed(ctx, j, w, ps)
			free.put(1)
			ps.finished()
		})
	}
	go func() {
		defer close(ps.done)
		n, next, err := p.claimLoop(ctx, now, b, free, start, ps)
		ps.claimsEnded(n, next, err)
		wg.Wait()
		ps.err = errors.Join(err, w.close(), p.endPass(ctx))
	}()
	return ps
}

// claimLoop claims the pass's feeds and starts their polls (start),
// counting them in ps. n counts the feeds claimed; next is where the next
// pass's recent claims should start: now, or where this pass's recent
// claims stopped when the limit (or the backlog's share of it) cut them
// short.
func (p *Poller) claimLoop(ctx context.Context, now time.Time, b passBounds, free *slots, start func(claimedFeed), ps *runningPass) (n int, next time.Time, err error) {
	// A claim waits until half a batch of slots is free (all of them at
	// first), so that claims stay large (their cost is mostly per claim)
	// while the other half keeps the workers busy.
	low := max(p.cfg.Batch/2, 1)
	after, recent := b.recent, !b.recent.IsZero() // where the next claim starts (see store.ClaimDueFeeds)
	recentDone := !recent                         // no recent claims wanted, or none left
	var shared bool                               // the backlog has had its turn
	var resume time.Time                          // where the recent claims paused for it
	for ctx.Err() == nil && (b.limit <= 0 || n < b.limit) {
		if recent && !shared && b.limit > 0 && n >= b.limit-b.limit/backlogShare {
			shared, resume, recent, after = true, after, false, time.Time{}
		}
		want, werr := free.take(ctx, low)
		if werr != nil {
			return n, now, nil
		}
		feeds, hosts, cerr := p.claim(ctx, now, want, after)
		free.put(want - len(feeds))
		if cerr != nil {
			if ctx.Err() != nil {
				return n, now, nil
			}
			return n, now, fmt.Errorf("poller: %w", cerr)
		}
		ps.opened(len(feeds))
		for i := range feeds {
			f := &feeds[i]
			if f.NextPollAt.After(after) {
				after = f.NextPollAt
			}
			start(claimedFeed{feed: f, host: hosts[f.HostKey()]})
		}
		n += len(feeds)
		if len(feeds) < want {
			// Claims take the oldest due feeds first: a short batch means
			// nothing else is due at now (from after on).
			switch {
			case recent:
				recentDone, recent, after = true, false, time.Time{} // now the backlog, oldest first
			case !recentDone:
				recent, after = true, resume // the backlog is done: back to the recent feeds
			default:
				return n, now, nil
			}
		}
	}
	switch {
	case recent:
		return n, after, nil
	case !recentDone:
		return n, resume, nil
	}
	return n, now, nil
}

// claim claims up to want feeds due at now (store.ClaimDueFeeds), passing
// the feeds this poller holds already, and records the claimed feeds as held
// and their hosts as leased.
func (p *Poller) claim(ctx context.Context, now time.Time, want int, after time.Time) ([]store.Feed, map[string]*store.Host, error) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	clk := p.clk.Now()
	p.hmu.Lock()
	held := make([]int64, 0, len(p.held))
	for id, h := range p.held {
		if h.until.After(clk) {
			held = append(held, id)
		} else {
			delete(p.held, id) // its lease ran out: it may be claimed again
		}
	}
	p.hmu.Unlock()
	feeds, hosts, err := p.st.ClaimDueFeeds(ctx, p.cfg.Owner, p.cfg.Lease, now, want, held, after)
	p.hmu.Lock()
	for _, h := range hosts {
		p.leased[h.Host] = true
	}
	for _, f := range feeds {
		until := now.Add(p.cfg.Lease)
		if f.LeaseUntil != nil {
			until = *f.LeaseUntil
		}
		p.held[f.ID] = heldFeed{until: until, host: f.HostKey()}
	}
	p.hmu.Unlock()
	if err != nil || len(feeds) == 0 {
		return feeds, nil, err
	}
	if hosts == nil { // SQLite: the claim leased feeds, not hosts
		hosts = p.hostRows(ctx, feeds)
	}
	return feeds, hostsByName(hosts), nil
}

// unhold forgets a held feed once its poll is written or it was given back.
// A feed whose write failed stays held until its lease ends, as its lease
// row would on SQLite, so it is not fetched again before then.
func (p *Poller) unhold(id int64) {
	p.hmu.Lock()
	delete(p.held, id)
	p.hmu.Unlock()
}

// holds reports whether this poller holds feed id (claimed by a pass, not
// yet written).
func (p *Poller) holds(id int64) bool {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	h, ok := p.held[id]
	return ok && h.until.After(p.clk.Now())
}

// heldFeed is a feed this poller claimed and has not written or given
// back: the end of its lease and its host.
type heldFeed struct {
	until time.Time
	host  string
}

// endPass ends a pass. It gives back the host leases its claims (and those
// of other passes) took (store.ClaimDueFeeds) for the hosts of which this
// poller holds no feed any more, letting other processes poll those hosts
// at once; a host with a feed still held (a slow fetch of another pass)
// stays leased. It holds cmu, so no claim leases a host between the check
// and the release.
func (p *Poller) endPass(ctx context.Context) error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	p.hmu.Lock()
	p.passes--
	if len(p.leased) == 0 {
		p.hmu.Unlock()
		return nil
	}
	busy := make(map[string]bool)
	if p.passes > 0 {
		for _, h := range p.held {
			busy[h.host] = true
		}
	}
	hosts := make([]string, 0, len(p.leased))
	for h := range p.leased {
		if !busy[h] {
			hosts = append(hosts, h)
			delete(p.leased, h)
		}
	}
	p.hmu.Unlock()
	if len(hosts) == 0 {
		return nil
	}
	// Through a database away for a moment: hosts not given back keep
	// other processes off them until their leases end.
	wctx, cancel := pollWriteContext(ctx)
	defer cancel()
	_, err := store.RetryTransient(wctx, time.Minute, func(ctx context.Context) error {
		return p.st.ReleaseHosts(ctx, p.cfg.Owner, hosts)
	})
	return err
}

// claimedFeed is one feed a worker is to poll, with its host's row.
type claimedFeed struct {
	feed *store.Feed // in the claim's batch
	host *store.Host // shared by the claim's feeds of that host; nil: no row
}

// hostRows loads the hosts rows of a batch's hosts (one query). A failure
// is logged: the batch then goes ahead with what this process knows. (A
// running back-off in a row reaches the limiter when a feed of that host
// comes up: see backedOff.)
func (p *Poller) hostRows(ctx context.Context, feeds []store.Feed) []store.Host {
	seen := make(map[string]bool)
	var names []string
	for _, f := range feeds {
		if h := f.HostKey(); h != "" && !seen[h] {
			seen[h] = true
			names = append(names, h)
		}
	}
	rows, err := p.st.Hosts(ctx, names)
	if err != nil {
		p.log.Warn("reading host limits failed", "err", err)
		return nil
	}
	out := make([]store.Host, 0, len(rows))
	for _, h := range rows {
		out = append(out, h)
	}
	return out
}

// hostsByName indexes a claim's host rows by name; the claimed feeds of a
// host share its row.
func hostsByName(hosts []store.Host) map[string]*store.Host {
	rows := make(map[string]*store.Host, len(hosts))
	for i := range hosts {
		rows[hosts[i].Host] = &hosts[i]
	}
	return rows
}
