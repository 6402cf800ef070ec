package poller

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
)

// The worker.
//
// A Poller claims due feeds from the store in batches, each for a lease
// (store.ClaimDueFeeds: on Postgres through a lease on the feed's host, so
// any number of processes share the work and never fetch a feed twice; the
// poller passes the feeds it holds, so it is not handed them again), fetches them with
// bounded concurrency behind the per-host limiter, turns each answer into a
// Result, parses and selects new items when the body changed, asks Schedule
// for the next poll, and writes everything with store.RecordPolls.
//
// Choices where DESIGN.md is silent:
//
//   - Writes are batched: a writer goroutine collects finished polls and
//     records up to Config.WriteBatch of them in one transaction (each still
//     guarded by its own lease). A batch that fails is retried feed by feed,
//     so one bad row cannot sink the others. Polls that end a feed (410,
//     blacklisting) or change its URL are recorded on their own.
//   - At most Config.Batch feeds (by default 1,024) are claimed and not yet
//     finished at any time; a new claim is made once half of them are done,
//     so claims stay large (much of a claim's cost is per claim, not per
//     feed: on a warm pass over 2,000 feeds, claims of 512–1,024 instead of
//     128–256 cost Postgres 3–6 µs less per feed) and the workers never
//     wait for one. A feed whose lease has less time left than a whole
//     fetch may take (also after waiting for a slot of a busy host) is given
//     back, due in a minute, rather than fetched: a fetch never outlives its
//     lease, so no other process can claim the feed while it runs. Only a
//     host that holds most of a claim's feeds and answers slower than about
//     0.17 s makes its last ones wait that long (2 in flight, 85 s of a
//     2-minute lease); those are polled a pass later, which its two
//     request slots would not have allowed sooner anyway, at the cost of
//     one more write each.
//   - A pass's claims each start where the previous one ended (by
//     next_poll_at; store.ClaimDueFeeds' after), so they do not scan again
//     over the feeds the pass has claimed or written. A feed the pass
//     passed over because another process held its host is taken by the
//     next pass (Run starts one at once after a pass that polled anything).
//   - On Postgres a claim leases each feed together with its host (see
//     store.ClaimDueFeeds): one process at a time polls a host, so the
//     limit of MaxPerHost requests in flight holds for the publisher however
//     many processes run. A pass that ends gives its host leases back
//     (store.ReleaseHosts), so hosts never stay idle behind a sleeping
//     process. PollFeed (`feedmail poll`, revivals) takes no host lease.
//   - The hosts rows (limits, back-offs) of a claimed batch come with it:
//     on Postgres the claim's host lease returns them, on SQLite they are
//     read once per batch; a back-off this process causes applies at once
//     in memory.
//   - A host that is backed off (this process saw a 429, or the hosts table
//     says so, which is how other processes learn of it) is not asked: its
//     claimed feeds are given back, due at the end of the back-off plus up to
//     10 % of the wait as jitter, so they do not all return in the same
//     second.
//   - After downtime, feeds overdue by more than a minute are spread over
//     Config.SpreadWindow (10 min) when Run starts, so a restart never
//     stampedes publishers.
//   - A shutdown (ctx ended) never penalises a feed: an unfinished fetch
//     gives the feed back, due now; a finished one is still written (with a
//     detached, bounded context).
//   - body_hash and validators are only stored from a 200 that parsed as a
//     feed: an HTML error page answered with 200 is re-fetched in full (and
//     penalised) until a feed comes back.
//   - A feed's first successful parse sets last_new_item_at to the date of
//     its newest item (not later than now) when items are dated, so a feed
//     that has been quiet for years is polled like one, from the start.
//   - newest_item_date ignores item dates more than 24 h in the future, so a
//     mis-dated item cannot make the 7-day rule ignore every later post.
//   - A 301/308 whose new URL serves a feed (200 that parses, same body as
//     before, or 304) updates the feed's URL. When a feed with that URL
//     already exists, this one is merged into it (store.PollRecord.MergeInto):
//     subscriptions move, this feed's item identities are copied there as
//     seen so nobody gets a post twice, this feed ends in state "merged", and
//     the poll's items are not recorded (the surviving feed is polled at
//     once and delivers them to everyone). The price: a post that the old
//     feed saw before the surviving feed did is not mailed to the surviving
//     feed's own subscribers (it counts as seen there); the alternative
//     would mail it twice to everyone who moved.
//   - A poll of a blacklisted or gone feed by PollFeed (publisher ping,
//     `feedmail poll`) that succeeds puts it back to "active": that is how
//     a feed leaves the blacklist. (Gone feeds have no subscriptions left, so
//     they are still not polled unless someone subscribes again.)
//   - poll_log keeps PollLogRetention (7 days) of polls; Run prunes it
//     hourly. The status page shows the last few. A 304 that repeats the
//     feed's newest line (that line a 304 too, no error either time, no
//     redirect, same URL and state, the line less than LogRunMax old) is
//     counted in feeds.log_seq instead of logged (store.PollRecord.Fold),
//     and the status page shows "and N more like it": a feed polled every
//     5 minutes that never changes writes a line a day, not 288, which on a
//     warm pass is about a quarter of the write's cost in Postgres.
//   - Pushed content (Ingest) needs no lease: items are idempotent by their
//     unique keys, and the pushed state (title, newest dates) is merged, not
//     overwritten, so a push never has to wait for, or be refused by, a poll
//     in progress.

// Poller polls feeds. Make one per process with New; it is safe for
// concurrent use (Run, PollDue, PollFeed and Ingest may overlap).
type Poller struct {
	cfg     Config
	st      *store.Store
	client  *fetcher.Client
	limiter *HostLimiter
	clk     clock.Clock
	log     *slog.Logger
	m       *metrics.Metrics

	rmu sync.Mutex
	rnd *rand.Rand

	// hmu guards passes (PollDue calls running), leased (the hosts their
	// claims leased, given back when the last of them ends) and held (the
	// feeds claimed and not yet written or given back, with the end of
	// their lease: store.ClaimDueFeeds must not hand them out again). cmu
	// makes a claim and the held entries it adds one step, so two passes of
	// this poller never claim the same feed.
	hmu    sync.Mutex
	passes int
	leased map[string]bool
	held   map[int64]time.Time
	cmu    sync.Mutex

	wake chan struct{}
}

// New makes a Poller from cfg.
func New(cfg Config) (*Poller, error) {
	if cfg.Store == nil {
		return nil, errors.New("poller: Config.Store is required")
	}
	if cfg.Owner == "" {
		return nil, errors.New("poller: Config.Owner is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64 * cfg.Concurrency
	}
	client := fetcher.New(cfg.Fetch)
	timeout := client.Config().Timeout
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	cfg.Lease = max(cfg.Lease, 2*timeout)
	if cfg.WriteBatch <= 0 {
		cfg.WriteBatch = DefaultWriteBatch
	}
	if cfg.SpreadWindow <= 0 {
		cfg.SpreadWindow = DefaultSpreadWindow
	}
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = DefaultIdleWait
	}
	if cfg.Rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		cfg.Rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	return &Poller{
		cfg:     cfg,
		st:      cfg.Store,
		client:  client,
		limiter: NewHostLimiter(cfg.MaxPerHost, cfg.Clock),
		clk:     cfg.Clock,
		log:     cfg.Log,
		m:       cfg.Metrics,
		rnd:     cfg.Rand,
		wake:    make(chan struct{}, 1),
		leased:  make(map[string]bool),
		held:    make(map[int64]time.Time),
	}, nil
}

// Owner returns the lease owner name of this poller.
func (p *Poller) Owner() string { return p.cfg.Owner }

// Close closes idle kept-alive connections.
func (p *Poller) Close() { p.client.CloseIdleConnections() }

// Wake makes a sleeping Run look for due feeds now (after a ping or a new
// subscription made a feed due early).
func (p *Poller) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// jitter returns a number in [0, 1) for Schedule.
func (p *Poller) jitter() float64 {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return p.rnd.Float64()
}

// SpreadOverdue spreads the feeds that are overdue by more than a minute over
// the next Config.SpreadWindow, so that a restart after downtime does not
// fire every overdue feed at once. Run calls it once when it starts.
func (p *Poller) SpreadOverdue(ctx context.Context) (int64, error) {
	n, err := p.st.SpreadOverdueFeeds(ctx, p.clk.Now(), time.Minute, p.cfg.SpreadWindow)
	if err != nil {
		return 0, fmt.Errorf("poller: %w", err)
	}
	if n > 0 {
		p.log.Info("spread overdue feeds", "feeds", n, "window", p.cfg.SpreadWindow)
	}
	return n, nil
}

// Run polls due feeds until ctx ends: once at start it fills in the host of
// feeds stored before hosts were kept and spreads overdue feeds,
// then it runs PollDue passes, sleeping between them until the next feed is
// due (as the store says), at most Config.IdleWait, or until Wake. Once an
// hour it prunes poll_log rows older than PollLogRetention. It returns
// ctx.Err() when ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	if n, err := p.st.FillFeedHosts(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("filling in feed hosts failed", "err", err)
	} else if n > 0 {
		p.log.Info("filled in feed hosts", "feeds", n)
	}
	if _, err := p.SpreadOverdue(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("spreading overdue feeds failed", "err", err)
	}
	var lastPrune time.Time
	for {
		n, err := p.PollDue(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			p.log.Error("poll pass failed", "err", err)
		}
		now := p.clk.Now()
		if now.Sub(lastPrune) >= time.Hour {
			lastPrune = now
			if k, err := p.st.PrunePollLog(ctx, now.Add(-PollLogRetention)); err != nil {
				p.log.Warn("pruning poll log failed", "err", err)
			} else if k > 0 {
				p.log.Info("pruned poll log", "rows", k)
			}
		}
		if n > 0 && err == nil {
			continue // more may have become due while we worked
		}
		wait := p.cfg.IdleWait
		if err == nil {
			if next, ok, nerr := p.st.NextPollDue(ctx, p.cfg.Owner); nerr == nil && ok {
				if d := next.Sub(p.clk.Now()); d < wait {
					wait = max(d, 10*time.Millisecond)
				}
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		case <-p.wake:
			t.Stop()
		}
	}
}
