package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/retention"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/poller"
)

// newPoller builds a poller for this process on s. part names its use
// ("poller", "cli") in the lease owner, which is also unique per process:
// host name, process id and a random suffix (process ids repeat across
// containers that share a host name). afterPoll may be nil.
func (a *app) newPoller(s *store.Store, part string, afterPoll func(context.Context, poller.PollEvent)) (*poller.Poller, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	cfg := poller.Config{
		Store:     s,
		Fetch:     a.fetchConfig(),
		Clock:     a.clock,
		Log:       a.log.With("role", part),
		Metrics:   a.metrics,
		DBWait:    a.dbWait,
		Owner:     fmt.Sprintf("%s-%d-%s-%s", hostname(), os.Getpid(), part, hex.EncodeToString(b[:])),
		AfterPoll: afterPoll,
	}
	if a.tokens != nil {
		l := a.links()
		cfg.Links = &l
	}
	return poller.New(cfg)
}

// fetchConfig is the HTTP client's configuration of feeds and pages.
func (a *app) fetchConfig() fetcher.Config {
	return fetcher.Config{BaseURL: a.cfg.BaseURL, AllowPrivate: a.cfg.AllowPrivateNetworks}
}

// recoveryEvery is how often the poller role looks for feeds whose
// rediscovery is due (ailing or stale ones; the attempts themselves are
// spaced by poller.RetryAfter).
const recoveryEvery = 5 * time.Minute

// rolePoller runs the poller (claims due feeds, fetches, records) and, next
// to it, the WebSub subscriber's renewal loop, the article fetches, the
// rediscovery of feeds that moved or died, and the hourly retention pass
// (the poller writes most of what it prunes); each poll's hub discovery
// goes to the subscriber through the poller's AfterPoll hook.
func rolePoller(a *app, _ *web.Server) (func(ctx context.Context) error, error) {
	s, err := a.openStore(context.Background())
	if err != nil {
		return nil, err
	}
	wsm, err := a.newWebSubManager(s)
	if err != nil {
		return nil, err
	}
	p, err := a.newPoller(s, "poller", wsm.OnPoll)
	if err != nil {
		return nil, err
	}
	a.log.Info("poller ready", "owner", p.Owner())
	return func(ctx context.Context) error {
		defer p.Close()
		var wg sync.WaitGroup
		wg.Go(func() { _ = wsm.Run(ctx) })
		wg.Go(func() { _ = p.RunArticles(ctx, article.NewReader(a.fetchConfig(), a.clock)) })
		wg.Go(func() {
			pr := &retention.Pruner{St: s, Policy: retention.Default(), Clock: a.clock, Log: a.log.With("role", "retention")}
			_ = pr.Run(ctx, time.Hour)
		})
		wg.Go(func() {
			a.metrics.WatchQueues(ctx, 15*time.Second, func(ctx context.Context) (map[string]int64, error) {
				n, err := s.CountDueFeeds(ctx)
				return map[string]int64{"due_feeds": n}, err
			})
		})
		wg.Go(func() { _ = p.RunRecovery(ctx, recoveryEvery) })
		wg.Go(func() {
			a.metrics.WatchRecovery(ctx, time.Minute, func(ctx context.Context) (map[string]int64, error) {
				now := a.clock.Now()
				return s.RecoveryCounts(ctx, now.Add(-poller.AilingAfter), poller.AilingPolls)
			})
		})
		err := p.Run(ctx)
		wg.Wait()
		return err
	}, nil
}
