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

// Poller polls feeds. Make one per process with New; it is safe for
// concurrent use (Run, PollDue, PollFeed and Ingest may overlap). It claims
// due feeds in batches, each for a lease (store.ClaimDueFeeds: on Postgres
// through a lease on the feed's host, so processes never fetch a feed twice
// and one process at a time polls a host), fetches them behind the
// per-host limiter, and records each poll with store.RecordPolls.
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

	// hmu guards passes (passes running), leased (the hosts their
	// claims leased, given back when the last of them ends) and held (the
	// feeds claimed and not yet written or given back, with the end of
	// their lease: store.ClaimDueFeeds must not hand them out again). cmu
	// makes a claim and the held entries it adds one step, so two passes of
	// this poller never claim the same feed.
	hmu    sync.Mutex
	passes int
	leased map[string]bool
	held   map[int64]heldFeed
	cmu    sync.Mutex

	// fetchSlots holds a token per feed a worker of any pass is polling:
	// Config.Concurrency at most, however many passes overlap.
	fetchSlots chan struct{}

	backs giveBacks
	wake  chan struct{}
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
	setDefault(&cfg.Concurrency, DefaultConcurrency)
	setDefault(&cfg.Batch, DefaultBatch)
	client := fetcher.New(cfg.Fetch)
	timeout := client.Config().Timeout
	setDefault(&cfg.Lease, DefaultLease)
	cfg.Lease = max(cfg.Lease, 2*timeout)
	setDefault(&cfg.WriteBatch, DefaultWriteBatch)
	setDefault(&cfg.SpreadWindow, DefaultSpreadWindow)
	setDefault(&cfg.IdleWait, DefaultIdleWait)
	setDefault(&cfg.PassGap, DefaultPassGap)
	setDefault(&cfg.WakeGap, DefaultWakeGap)
	setDefault(&cfg.PassFeeds, DefaultPassFeedsBatches*cfg.Batch)
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
		held:    make(map[int64]heldFeed),

		fetchSlots: make(chan struct{}, cfg.Concurrency),
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
// feeds stored before hosts were kept and spreads overdue feeds, then it
// runs passes like PollDue's, each of at most Config.PassFeeds feeds and
// each claiming the feeds that came due since the previous one began before
// any older backlog (see passBounds). A pass need not end before the next
// begins: once its claims ended and a fetch slot would be left free, the
// next may start while its last fetches (one hanging until the fetch
// timeout) finish (startPass). Between two passes it sleeps until the next
// feed is due (as the store says), at most Config.IdleWait, but at least
// until Config.PassGap after the previous pass began; a Wake ends the sleep
// once Config.WakeGap has passed. So feeds coming due one by one are
// claimed, fetched and written in batches, a pass a second, instead of a
// pass, a claim and a transaction each. It returns ctx.Err() when ctx ends,
// after its passes ended.
func (p *Poller) Run(ctx context.Context) error {
	if n, err := p.st.FillFeedHosts(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("filling in feed hosts failed", "err", err)
	} else if n > 0 {
		p.log.Info("filled in feed hosts", "feeds", n)
	}
	p.releaseRefused(ctx)
	if _, err := p.SpreadOverdue(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("spreading overdue feeds failed", "err", err)
	}
	var tails sync.WaitGroup
	defer tails.Wait()
	var recent time.Time
	for {
		began := time.Now()
		ps := p.startPass(ctx, p.clk.Now(), passBounds{recent: recent, limit: p.cfg.PassFeeds})
		var err error
		select {
		case <-ps.done:
			err = ps.err
		case <-ps.idle:
			err = ps.claimErr
			tails.Go(func() { p.endTail(ctx, ps) })
		}
		recent = ps.next
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !p.cfg.DBWait.Pass("poller", err) && err != nil {
			p.log.Error("poll pass failed", "err", err)
		}
		if err := p.sleep(ctx, began, p.untilDue(ctx, ps.n, err)); err != nil {
			return err
		}
	}
}

// endTail waits for the end of a pass that Run left to finish its last
// fetches, and logs what failed after its claims (writes, host release).
func (p *Poller) endTail(ctx context.Context, ps *runningPass) {
	<-ps.done
	if ps.err != nil && ps.claimErr == nil && ctx.Err() == nil {
		p.log.Error("poll pass failed", "err", ps.err)
	}
}

// untilDue is how long Run may sleep after a pass that claimed n feeds
// and ended with err: until the next feed is due, at most Config.IdleWait;
// no time after a pass that claimed feeds (more may be due already).
func (p *Poller) untilDue(ctx context.Context, n int, err error) time.Duration {
	if n > 0 && err == nil {
		return 0
	}
	wait := p.cfg.IdleWait
	if err == nil {
		if next, ok, nerr := p.st.NextPollDue(ctx, p.cfg.Owner); nerr == nil && ok {
			if d := next.Sub(p.clk.Now()); d < wait {
				wait = max(d, 0)
			}
		}
	}
	return wait
}

// sleep waits wait, but until at least Config.PassGap after began; a Wake
// cuts it short to Config.WakeGap after began. It returns ctx.Err() when
// ctx ends first.
func (p *Poller) sleep(ctx context.Context, began time.Time, wait time.Duration) error {
	gap := p.cfg.PassGap - time.Since(began)
	t := time.NewTimer(max(wait, gap, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-p.wake:
	}
	if left := p.cfg.WakeGap - time.Since(began); left > 0 {
		t.Reset(left)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// releaseRefused makes due now the feeds this installation refused for
// being on a private network (Refused, and the penalty older versions gave
// them) when this poller may visit private networks: the refusal was the
// setting's doing, so the publisher keeps no wait once it allows them.
func (p *Poller) releaseRefused(ctx context.Context) {
	if !p.cfg.Fetch.AllowPrivate {
		return
	}
	prefixes := []string{RefusedReasonPrefix, fetcher.DescribeKind(fetcher.KindPrivateAddress).Reason + ":"}
	n, err := p.st.DueAgainByReason(ctx, prefixes, p.clk.Now(), "private networks now allowed: poll now")
	switch {
	case err != nil && ctx.Err() == nil:
		p.log.Warn("making feeds refused as private due again failed", "err", err)
	case n > 0:
		p.log.Info("private networks allowed: feeds refused before are due now", "feeds", n)
	}
}

// setDefault sets *v to def when *v is zero or negative (a config field
// left unset).
func setDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
