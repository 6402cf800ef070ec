package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
)

// seed writes the steady run's feeds, people and subscriptions straight
// into the tables, as the other scenarios do (seed.go): every feed has
// subsPerFeed instant subscribers and each person follows feedsPerPerson
// feeds. The feeds wait a year until spread makes them due, so that serve
// finds nothing overdue to spread over its own window when it starts.
func (s *steady) seed(ctx context.Context) error {
	n := s.cfg.Feeds
	now := time.Now().UTC().Truncate(time.Second)
	e := &env{cfg: Config{Log: s.cfg.Log, Progress: s.cfg.Progress}, clk: clock.NewFake(now), st: s.st}
	var done atomic.Int64
	stop := e.progress("seeding", func() string { return fmt.Sprintf("%d rows", done.Load()) })
	defer stop()
	feeds := make([]store.Feed, n)
	for i := range feeds {
		feeds[i] = store.Feed{URL: s.urls[i], State: store.FeedActive, SubscriberCount: subsPerFeed,
			NextPollAt: now.AddDate(1, 0, 0), PollReason: "bench steady: waiting for the start", CreatedAt: now, UpdatedAt: now}
	}
	if err := create(ctx, s.st, feeds, &done); err != nil {
		return err
	}
	s.minID = feeds[0].ID
	if last := feeds[n-1].ID; last-s.minID != int64(n-1) {
		return checkf("feed ids %d…%d are not consecutive", s.minID, last)
	}
	nSubs := n * subsPerFeed
	users, err := e.seedUsers(ctx, "steady", (nSubs+feedsPerPerson-1)/feedsPerPerson, &done)
	if err != nil {
		return err
	}
	// Subscription j: person j / feedsPerPerson follows feed j % n, so a
	// person's feeds are distinct (n ≥ feedsPerPerson) and every feed gets
	// subsPerFeed people.
	subs := make([]store.Subscription, nSubs)
	for j := range subs {
		subs[j] = store.Subscription{UserID: users[j/feedsPerPerson].ID, FeedID: feeds[j%n].ID, State: store.SubActive,
			CreatedAt: now, ConfirmedAt: &now}
	}
	if err := create(ctx, s.st, subs, &done); err != nil {
		return err
	}
	if err := s.spreadLowLines(ctx, now); err != nil {
		return err
	}
	return e.analyze(ctx)
}

// spreadLowLines puts every person's running-low line due at a point of
// the next billing.MaxLowRecheck, as on a system that has run for weeks
// (billing.SpreadRecheck keeps them apart). Left never computed, every
// line of the run would be due at serve's start, and the pass that
// computes them (a few hundred a second) would take the first quarter of
// an hour of a million-feed run: a one-off catch-up, not the steady state.
func (s *steady) spreadLowLines(ctx context.Context, now time.Time) error {
	err := s.st.DB.WithContext(ctx).Exec(`UPDATE users SET low_line_due = ?::timestamptz +
  make_interval(secs => (abs(hashint8(id)::numeric) % 1000000) / 1000000.0 * ?::float8)`,
		now, billing.MaxLowRecheck.Seconds()).Error
	if err != nil {
		return fmt.Errorf("spread the running-low lines: %w", err)
	}
	return nil
}
