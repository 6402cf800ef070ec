package main

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// ownerLapseEvery is how often the mailer role tells readers of owner-paid
// feeds whose owner ran out, and ends lapses past their notice period.
const ownerLapseEvery = time.Minute

// ownerLapsePass tells the lapses not told yet and sweeps those past
// billing.OwnerNoticePeriod (store.NotifyOwnerLapses, SweepOwnerLapses);
// several processes may run it at once.
func (a *app) ownerLapsePass(ctx context.Context, s *store.Store) error {
	n := notices.OwnerLapse(a.links(), a.clock.Now(), a.cfg.PaymentsEnabled())
	told, err := s.NotifyOwnerLapses(ctx, billing.OwnerNoticePeriod, n)
	if err != nil {
		return err
	}
	ended, err := s.SweepOwnerLapses(ctx, billing.OwnerNoticePeriod, n)
	if told > 0 || ended > 0 {
		a.log.Info("owner-paid feeds: lapses handled", "notices", told, "unsubscribed", ended)
	}
	return err
}

// runOwnerLapses runs ownerLapsePass every ownerLapseEvery until ctx ends.
func (a *app) runOwnerLapses(ctx context.Context, s *store.Store) {
	t := time.NewTicker(ownerLapseEvery)
	defer t.Stop()
	for {
		if err := a.ownerLapsePass(ctx, s); err != nil && ctx.Err() == nil {
			a.log.Error("owner-paid feeds: lapse pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
