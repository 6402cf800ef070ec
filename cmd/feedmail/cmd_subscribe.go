package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

const subscribeUsage = "--email E --feed URL [--digest NAME] [--confirmed]"

// cmdSubscribe adds (or revives) a subscription for the operator through
// the subscribe use case. The account is created when missing. --feed is
// taken as the feed's URL as given (no discovery: the operator names the
// feed itself); it must be an absolute http(s) URL. Without --confirmed the
// subscription waits for the person, who gets a confirmation email; with it
// the subscription is active at once and counts as the person's
// confirmation.
func cmdSubscribe(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "subscribe")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	feedURL := fs.String("feed", "", "the feed's URL")
	digestName := fs.String("digest", "", "deliver into this digest of the person's (instant when empty)")
	confirmed := fs.Bool("confirmed", false, "active at once, without a confirmation email")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	feed, err := subscribeFeedURL(*feedURL)
	if err != nil {
		return err
	}
	svc, err := a.subscribeService(ctx)
	if err != nil {
		return err
	}
	name := strings.TrimSpace(*digestName)
	res, err := svc.Subscribe(ctx, subscribe.Request{Email: addr, Feed: subscribe.Found{URL: feed},
		DigestName: name, Confirmed: *confirmed, ByOperator: true})
	var nd *subscribe.NoDigestError
	if errors.As(err, &nd) {
		return noDigestError(nd.Email, nd.Name)
	}
	if err != nil {
		return err
	}
	return a.printSubscribed(ctx, svc.Store, res, name)
}

// printSubscribed prints what cmdSubscribe did, with the person's balance.
func (a *app) printSubscribed(ctx context.Context, s *store.Store, res *subscribe.Result, digestName string) error {
	out := map[string]any{"email": res.User.Email, "feed": res.Feed.URL, "subscription": res.Sub.ID,
		"state": res.Sub.State, "delivery": "instant", "confirmation_sent": res.ConfirmationSent}
	if digestName != "" {
		out["delivery"] = "digest " + digestName
	}
	if res.Trial > 0 {
		out["trial_credits"] = res.Trial
	}
	u, err := s.UserByID(ctx, res.User.ID)
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
