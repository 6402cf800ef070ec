package lowbalance

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/store"
)

// Rate is a reader's forecast spending.
type Rate struct {
	// PerMonth is the expected credits a month of their instant
	// subscriptions and digests (forecast.Month); an instant feed with too
	// little stored history counts what its signup forecast said, a
	// digest's is left out.
	PerMonth float64
	// Unknown counts their paid feeds whose history tells no rate.
	Unknown int
}

// PerDay is the rate in credits a day.
func (r Rate) PerDay() float64 { return r.PerMonth * float64(24*time.Hour) / float64(forecast.Month) }

// Histories gives a subscription's forecast.History: its feed's, with its
// filters applied (Config.History, cached by the pass).
type Histories func(ctx context.Context, sub store.SubscriptionView) (forecast.History, error)

// ReaderRate returns what u is forecast to spend, as the account page
// forecasts it: each active instant subscription its feed's instant cost
// (its filters applied; nothing for a feed its publisher pays for; the
// cost the signup forecast showed while the stored posts cannot tell),
// each digest with active subscriptions its forecast.DigestCost. Pauses
// are not counted out: the line is for when mail flows, and a paused
// reader is charged nothing meanwhile, so only the pass could warn them.
func ReaderRate(ctx context.Context, st *store.Store, hist Histories, u *store.User, now time.Time) (Rate, error) {
	var r Rate
	subs, err := st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return r, fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	// Feeds a publisher pays for cost the reader nothing, unless the
	// publisher stopped and the reader chose to pay (as the account page
	// and the charge say).
	owned, err := st.OwnerPaidOfUser(ctx, u.ID, billing.OwnerNoticePeriod)
	if err != nil {
		return r, fmt.Errorf("owner-paid feeds of user %d: %w", u.ID, err)
	}
	perDigest := map[int64][]forecast.History{}
	for _, sub := range subs {
		if o, ok := owned[sub.ID]; sub.State != store.SubActive || (ok && !o.ReaderPays()) {
			continue
		}
		h, err := hist(ctx, sub)
		if err != nil {
			return r, err
		}
		if !h.Known() {
			r.Unknown++
		}
		switch {
		case sub.DigestID != nil:
			perDigest[*sub.DigestID] = append(perDigest[*sub.DigestID], h)
		case h.Known():
			r.PerMonth += h.InstantCost().Expected
		default:
			// No stored history yet (a new account's feed): what the
			// forecast said at signup, until the posts tell.
			r.PerMonth += sub.SignupCreditsMonth
		}
	}
	if len(perDigest) == 0 {
		return r, nil
	}
	digests, err := st.DigestsOfUser(ctx, u.ID)
	if err != nil {
		return r, fmt.Errorf("digests of user %d: %w", u.ID, err)
	}
	for _, d := range digests {
		if len(perDigest[d.ID]) == 0 {
			continue
		}
		sched, err := digest.ParseSchedule(d.Schedule, d.Timezone)
		if err != nil {
			continue // a stored schedule parsed once; its cost is unknown
		}
		r.PerMonth += forecast.DigestCost(perDigest[d.ID], sched, now).Expected
	}
	return r, nil
}
