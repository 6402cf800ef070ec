package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

const subscribeUsage = "--email E --feed URL [--digest NAME] [--confirmed]"

// cmdSubscribe adds (or revives) a subscription for the operator. The
// account is created when missing. --feed is taken as the feed's URL as
// given (no discovery: the operator names the feed itself); it must be an
// absolute http(s) URL. Without --confirmed the subscription waits for the
// person, who gets a confirmation email; with it the subscription is active
// at once and counts as the person's confirmation: trial credits (once per
// account) and the bouncing mark cleared (see mailer's outbox notes).
func cmdSubscribe(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "subscribe")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	feedURL := fs.String("feed", "", "the feed's URL")
	digestName := fs.String("digest", "", "deliver into this digest of the person's (instant when empty)")
	confirmed := fs.Bool("confirmed", false, "active at once, without a confirmation email")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	addr, err := creditsEmailFlag(*email)
	if err != nil {
		return err
	}
	feed, err := subscribeFeedURL(*feedURL)
	if err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	u, _, err := s.EnsureUser(ctx, addr)
	if err != nil {
		return err
	}
	var digestID *int64
	if name := strings.TrimSpace(*digestName); name != "" {
		dg, err := s.DigestByName(ctx, u.ID, name)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s has no digest %q (create it with `feedmail digest set`)", u.Email, name)
		}
		if err != nil {
			return err
		}
		digestID = &dg.ID
	}
	f, _, err := s.EnsureFeed(ctx, feed)
	if err != nil {
		return err
	}
	sub, err := s.Subscribe(ctx, u.ID, f.ID, digestID, *confirmed)
	if err != nil {
		return err
	}
	out := map[string]any{"email": u.Email, "feed": f.URL, "subscription": sub.ID, "state": sub.State,
		"delivery": "instant", "confirmation_sent": false}
	if digestID != nil {
		out["delivery"] = "digest " + strings.TrimSpace(*digestName)
	}
	switch {
	case sub.State == store.SubActive && *confirmed:
		if _, err := s.MarkUserConfirmed(ctx, u.ID); err != nil {
			return err
		}
		e, applied, err := s.GrantTrialOnce(ctx, u.ID, a.cfg.TrialCredits)
		if err != nil {
			return err
		}
		if applied {
			out["trial_credits"] = e.Amount
		}
		if _, err := s.ClearBouncing(ctx, u.ID); err != nil {
			return err
		}
	case sub.State == store.SubPending:
		now := a.clock.Now()
		lk := links.New(a.cfg.BaseURL, a.tokens, a.cfg.From)
		title := f.Title
		if title == "" {
			title = f.URL
		}
		key, n := notices.ConfirmByOperator(lk, now, sub.ID, title, u.Email)
		queued, err := s.QueueNotice(ctx, u.ID, key, n)
		if err != nil {
			return err
		}
		out["confirmation_sent"] = queued
	}
	u, err = s.UserByID(ctx, u.ID)
	if err != nil {
		return err
	}
	out["balance"] = u.Balance
	return a.printJSON(out)
}

// subscribeFeedURL checks --feed: an absolute http(s) URL without
// credentials; the fragment is dropped.
func subscribeFeedURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("%w: --feed is required", errUsage)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		strings.ContainsAny(raw, " \t\r\n") {
		return "", fmt.Errorf("%w: --feed %q is not an http(s) URL", errUsage, raw)
	}
	u.Fragment = ""
	return u.String(), nil
}
