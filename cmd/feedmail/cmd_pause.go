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
	pauseUsage  = "--email E [--feed URL] [--until 2026-12-24|RFC3339|14d|2w|36h]"
	resumeUsage = "--email E [--feed URL]"
)

// pausedJSON is what `feedmail pause` and `feedmail resume` print.
type pausedJSON struct {
	Email  string `json:"email"`
	Feed   string `json:"feed,omitempty"` // empty: the whole account
	Paused bool   `json:"paused"`
	Until  string `json:"until,omitempty"` // RFC 3339; empty: until resumed
}

// cmdPause pauses one subscription (--feed) or the whole account: nothing
// is mailed or charged for it until --until (see pause.ParseUntil) or
// `feedmail resume`; a digest's first issue after the pause carries what
// was published meanwhile.
func cmdPause(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "pause")
	email := fs.String("email", "", "the person's email address")
	feed := fs.String("feed", "", "the subscription's feed URL (default: the whole account)")
	until := fs.String("until", "", "when the pause ends: a date (the start of that day in the account's time zone), an RFC 3339 time, or a duration like 14d, 2w, 36h (default: until resumed)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	// Check --until before the account is looked up: a typing mistake is
	// a usage error whoever it is for (the zone only moves a date's start).
	if _, err := untilFlag(*until, a.clock.Now(), time.UTC); err != nil {
		return err
	}
	s, u, subID, err := a.pauseTarget(ctx, *email, *feed)
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
	if err := s.Pause(ctx, u.ID, subID, end); err != nil {
		return err
	}
	out := pausedJSON{Email: u.Email, Feed: *feed, Paused: true}
	if end != nil {
		out.Until = end.Format(time.RFC3339)
	}
	a.log.Info("paused", "user", u.ID, "subscription", subID, "until", out.Until)
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

// cmdResume ends the pause of one subscription (--feed) or of the whole
// account; the email the pause held is queued again.
func cmdResume(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "resume")
	email := fs.String("email", "", "the person's email address")
	feed := fs.String("feed", "", "the subscription's feed URL (default: the whole account)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	s, u, subID, err := a.pauseTarget(ctx, *email, *feed)
	if err != nil {
		return err
	}
	if _, err := s.Resume(ctx, u.ID, subID); err != nil {
		return err
	}
	a.log.Info("resumed", "user", u.ID, "subscription", subID)
	return a.printJSON(pausedJSON{Email: u.Email, Feed: *feed, Paused: false})
}

// pauseTarget checks --email and --feed and returns the account and the
// id of its subscription to feed (0 without --feed). An unknown address,
// or a feed the person is not subscribed to, is a one-line error.
func (a *app) pauseTarget(ctx context.Context, email, feed string) (*store.Store, *store.User, int64, error) {
	if feed != "" {
		if _, err := feedURLArg(feed); err != nil {
			return nil, nil, 0, err
		}
	}
	s, u, err := a.existingUser(ctx, email)
	if err != nil || feed == "" {
		return s, u, 0, err
	}
	views, err := s.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, v := range views {
		if v.FeedURL == feed {
			return s, u, v.ID, nil
		}
	}
	return nil, nil, 0, fmt.Errorf("%s is not subscribed to %s", u.Email, feed)
}
