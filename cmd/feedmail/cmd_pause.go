package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/pause"
	"github.com/feedmail/feedmail/internal/store"
)

const (
	pauseUsage  = "--email E [--feed URL [--channel NAME [--target URL]]] [--until 2026-12-24|RFC3339|14d|2w|36h]"
	resumeUsage = "--email E [--feed URL [--channel NAME [--target URL]]]"
)

// pausedJSON is what `feedmail pause` and `feedmail resume` print.
type pausedJSON struct {
	Email string `json:"email"`
	Feed  string `json:"feed,omitempty"` // empty: the whole account
	// Subscriptions are the feed's deliveries paused or resumed (with
	// --feed).
	Subscriptions []int64 `json:"subscriptions,omitempty"`
	Paused        bool    `json:"paused"`
	Until         string  `json:"until,omitempty"` // RFC 3339; empty: until resumed
}

// cmdPause pauses a feed (--feed: every delivery of it, or the one
// --channel and --target pick) or the whole account: nothing is mailed or
// charged for it until --until (see pause.ParseUntil) or `feedmail
// resume`; a digest's first issue after the pause carries what was
// published meanwhile.
func cmdPause(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "pause")
	email := fs.String("email", "", "the person's email address")
	feed := fs.String("feed", "", "the subscription's feed URL (default: the whole account)")
	pick := deliveryFlags(fs, "every delivery of the feed")
	until := fs.String("until", "", "when the pause ends: a date (the start of that day in the account's time zone), an RFC 3339 time, or a duration like 14d, 2w, 36h (default: until resumed)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	// Check --until before the account is looked up: a typing mistake is
	// a usage error whoever it is for (the zone only moves a date's start).
	if _, err := untilFlag(*until, a.clock.Now(), time.UTC); err != nil {
		return err
	}
	s, u, subIDs, err := a.pauseTarget(ctx, *email, *feed, *pick)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(u.Timezone)
	if err != nil {
		loc = time.UTC
	}
	end, err := untilFlag(*until, a.clock.Now(), loc)
	if err != nil {
		return err
	}
	for _, id := range subIDs {
		if err := s.Pause(ctx, u.ID, id, end); err != nil {
			return err
		}
	}
	out := pausedJSON{Email: u.Email, Feed: *feed, Paused: true, Subscriptions: nonZero(subIDs)}
	if end != nil {
		out.Until = end.Format(time.RFC3339)
	}
	a.log.Info("paused", "user", u.ID, "subscriptions", subIDs, "until", out.Until)
	return a.printJSON(out)
}

// untilFlag returns --until as pause.ParseUntil reads it in loc; text it
// cannot read, or an end already past, is a usage error (exit 2).
func untilFlag(v string, now time.Time, loc *time.Location) (*time.Time, error) {
	end, err := pause.ParseUntil(v, now, loc)
	if errors.Is(err, pause.ErrBadUntil) || errors.Is(err, pause.ErrPast) {
		return nil, fmt.Errorf("%w: --%w", errUsage, err)
	}
	return end, err
}

// cmdResume ends the pause of a feed (--feed: every delivery of it, or
// the one --channel and --target pick) or of the whole account; the email
// the pause held is queued again.
func cmdResume(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "resume")
	email := fs.String("email", "", "the person's email address")
	feed := fs.String("feed", "", "the subscription's feed URL (default: the whole account)")
	pick := deliveryFlags(fs, "every delivery of the feed")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	s, u, subIDs, err := a.pauseTarget(ctx, *email, *feed, *pick)
	if err != nil {
		return err
	}
	for _, id := range subIDs {
		if _, err := s.Resume(ctx, u.ID, id); err != nil {
			return err
		}
	}
	a.log.Info("resumed", "user", u.ID, "subscriptions", subIDs)
	return a.printJSON(pausedJSON{Email: u.Email, Feed: *feed, Paused: false, Subscriptions: nonZero(subIDs)})
}

// nonZero is ids without the 0 that stands for the whole account.
func nonZero(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if id != 0 {
			out = append(out, id)
		}
	}
	return out
}

// pauseTarget checks --email, --feed and the delivery picked, and returns
// the account and the ids of its subscriptions to feed: every delivery of
// it, or the one picked ([0], the whole account, without --feed). An
// unknown address, or a feed or delivery the person does not have, is a
// one-line error.
func (a *app) pauseTarget(ctx context.Context, email, feed string, pick deliveryPick) (*store.Store, *store.User, []int64, error) {
	if feed != "" {
		if _, err := feedURLArg(feed); err != nil {
			return nil, nil, nil, err
		}
	} else if pick.given() {
		return nil, nil, nil, fmt.Errorf("%w: --channel and --target pick a delivery of --feed", errUsage)
	}
	s, u, err := a.existingUser(ctx, email)
	if err != nil || feed == "" {
		return s, u, []int64{0}, err
	}
	views, err := feedDeliveries(ctx, s, u, feed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s is not subscribed to %s", u.Email, feed)
	}
	views, err = pickDeliveries(views, pick, true, u.Email, feed)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := make([]int64, len(views))
	for i := range views {
		ids[i] = views[i].ID
	}
	return s, u, ids, nil
}
