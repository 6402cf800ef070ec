// Package lowbalance owns the running-low pass: it computes, for readers
// whose line is due, the balance below which they are running low
// (billing.LowLine of their forecast rate, ReaderRate), stores it with
// the reader and queues the free warning of those already below it. The
// cheap check after each charge is the mailer's (store.WarnRunningLow);
// the forecast runs only here, once per reader every one to seven days
// (billing.LowLineRecheck).
//
// It must not charge, send email or decide the words of the notice
// (package notices) or the rules (package billing).
package lowbalance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// Defaults of Config.
const (
	DefaultEvery = time.Minute
	DefaultBatch = 200
	DefaultLease = 10 * time.Minute
)

// FeedHistory returns what a feed's stored items say of its rate for a
// subscription with include and exclude terms (package subscribe's
// StoredHistoryFiltered, as the account page reads it).
type FeedHistory func(ctx context.Context, feedID int64, include, exclude string) (forecast.History, error)

// Config configures a Pass.
type Config struct {
	Store *store.Store
	// History reads a feed's stored history; required. It is passed in so
	// that the forecast of a line is the account page's, without this
	// package importing the use cases (package subscribe).
	History FeedHistory
	// Links builds the buttons of the notice; PaymentsOn adds "Buy credits".
	Links      links.Links
	PaymentsOn bool
	Clock      clock.Clock
	Log        *slog.Logger
	// Every is the pause between runs when no line was due; Batch the
	// most lines a run computes; Lease how long a claimed line is left to
	// this process.
	Every time.Duration
	Batch int
	Lease time.Duration
}

// Pass computes due lines and warns.
type Pass struct {
	cfg Config
}

// New returns a Pass for cfg (Store and History are required).
func New(cfg Config) (*Pass, error) {
	if cfg.Store == nil {
		return nil, errors.New("lowbalance: a store is required")
	}
	if cfg.History == nil {
		return nil, errors.New("lowbalance: a feed history is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	setDefault(&cfg.Every, DefaultEvery)
	setDefault(&cfg.Batch, DefaultBatch)
	setDefault(&cfg.Lease, DefaultLease)
	return &Pass{cfg: cfg}, nil
}

// Run runs passes until ctx ends: at once again while whole batches were
// due, after Every otherwise. A failed run is logged and retried.
func (p *Pass) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		n, err := p.RunOnce(ctx)
		wait := p.cfg.Every
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			p.cfg.Log.Error("running-low pass failed", "err", err)
		case n >= p.cfg.Batch:
			wait = 0
		}
		timer.Reset(wait)
	}
}

// RunOnce claims up to Batch due lines, computes and stores them, and
// queues the warning of the readers below theirs. It returns how many
// lines it computed.
func (p *Pass) RunOnce(ctx context.Context) (int, error) {
	now := p.cfg.Clock.Now()
	ids, err := p.cfg.Store.ClaimLowLines(ctx, now, p.cfg.Lease, p.cfg.Batch)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	users, err := p.cfg.Store.UsersByIDs(ctx, ids)
	if err != nil {
		return 0, err
	}
	type key struct {
		feed             int64
		include, exclude string
	}
	cache := map[key]forecast.History{}
	hist := func(ctx context.Context, sub store.SubscriptionView) (forecast.History, error) {
		k := key{sub.FeedID, sub.IncludeTerms, sub.ExcludeTerms}
		if h, ok := cache[k]; ok {
			return h, nil
		}
		h, err := p.cfg.History(ctx, sub.FeedID, sub.IncludeTerms, sub.ExcludeTerms)
		if err == nil {
			cache[k] = h
		}
		return h, err
	}
	var lines []store.LowLineUpdate
	for _, id := range ids {
		u := users[id]
		if u == nil {
			continue // deleted meanwhile
		}
		l, err := p.line(ctx, hist, u, now)
		if err != nil {
			return 0, err
		}
		lines = append(lines, l)
	}
	if err := p.cfg.Store.SetLowLines(ctx, lines); err != nil {
		return 0, err
	}
	done := len(lines)
	n, err := p.cfg.Store.WarnRunningLow(ctx, ids, notices.RunningLowNotice(p.cfg.Links, p.cfg.Clock, p.cfg.PaymentsOn))
	if n > 0 {
		p.cfg.Log.Info("running-low warnings queued", "count", n)
	}
	return done, err
}

// line computes u's line and its next due time, spread per reader
// (billing.SpreadRecheck).
func (p *Pass) line(ctx context.Context, hist Histories, u *store.User, now time.Time) (store.LowLineUpdate, error) {
	r, err := ReaderRate(ctx, p.cfg.Store, hist, u, now)
	if err != nil {
		return store.LowLineUpdate{}, fmt.Errorf("running-low line of user %d: %w", u.ID, err)
	}
	line := billing.LowLine(r.PerDay())
	due := now.Add(billing.SpreadRecheck(u.ID, billing.LowLineRecheck(u.Balance, line, r.PerDay(), r.Unknown)))
	return store.LowLineUpdate{UserID: u.ID, Line: line, Due: due}, nil
}

// setDefault sets *v to def when *v is zero or negative (a config field
// left unset).
func setDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
