package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

const subscribeUsage = "--email E --feed URL [--digest NAME] [--confirmed] [--newest] [--include TERMS] [--exclude TERMS] [--format F] [--channel NAME --target URL [--token T]]"

// cmdSubscribe adds (or revives) a subscription for the operator through
// the subscribe use case, with the web form's checks: --feed is fetched
// and must be a feed, or a page that advertises exactly one (autodiscovery;
// several are listed for the operator to pick). What the fetch saw is the
// feed's baseline. The account is created when missing. Without
// --confirmed the subscription waits for the person, who gets a
// confirmation email; with it the subscription is active at once and
// counts as the person's confirmation. A subscription is one delivery of
// the feed: --channel and --target (none: email) name it, a new one is
// added beside the person's others ("created": true) and the one they
// have already takes the new settings.
func cmdSubscribe(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "subscribe")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	feedURL := fs.String("feed", "", "the feed's URL")
	digestName := fs.String("digest", "", "deliver into this digest of the person's (instant when empty)")
	confirmed := fs.Bool("confirmed", false, "active at once, without a confirmation email")
	newest := fs.Bool("newest", false, "also email the feed's newest post as soon as the subscription is confirmed ("+billing.Standard().PostCost()+")")
	controlsOf := controlFlags(fs)
	chanOf := channelFlags(fs, a.cfg.AllowPrivateNetworks)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	choice, err := chanOf()
	if err != nil {
		return err
	}
	controls, err := checkControlFlags(controlsOf())
	if err != nil {
		return err
	}
	addr, err := subscriberFlag(*email)
	if err != nil {
		return err
	}
	if _, err := subscribeFeedURL(*feedURL); err != nil {
		return err
	}
	feed := strings.TrimSpace(*feedURL)
	svc, err := a.subscribeService(ctx)
	if err != nil {
		return err
	}
	found, err := findFeed(ctx, svc, feed)
	if err != nil {
		return err
	}
	name := strings.TrimSpace(*digestName)
	res, err := svc.Subscribe(ctx, subscribe.Request{Email: addr, Feed: found,
		DigestName: name, Confirmed: *confirmed, ByOperator: true, SendNewest: *newest, Controls: controls, Channel: choice})
	var nd *subscribe.NoDigestError
	if errors.As(err, &nd) {
		return noDigestError(nd.Email, nd.Name)
	}
	if err != nil {
		return err
	}
	fc, err := svc.ForecastFor(ctx, &found, res.Sub.FeedID, res.Sub.IncludeTerms, res.Sub.ExcludeTerms)
	if err != nil {
		return err
	}
	return a.printSubscribed(ctx, svc.Store, res, fc)
}

// printSubscribed prints what cmdSubscribe did, with the person's balance
// and the feed's cost forecast; its delivery is the one Subscribe logged.
func (a *app) printSubscribed(ctx context.Context, s *store.Store, res *subscribe.Result, fc forecast.Forecast) error {
	out := map[string]any{"email": res.User.Email, "feed": res.Feed.URL, "subscription": res.Sub.ID,
		"state": res.Sub.State, "delivery": res.Delivery, "confirmation_sent": res.ConfirmationSent,
		"forecast": forecastJSON(fc), "format": res.Sub.Format, "created": res.Created}
	if res.Sub.IncludeTerms != "" {
		out["include"] = res.Sub.IncludeTerms
	}
	if res.Sub.ExcludeTerms != "" {
		out["exclude"] = res.Sub.ExcludeTerms
	}
	if res.Trial > 0 {
		out["trial_credits"] = res.Trial
	}
	addChannelJSON(out, res.Sub)
	u, err := s.UserByID(ctx, res.User.ID)
	if err != nil {
		return err
	}
	out["balance"] = u.Balance
	return a.printJSON(out)
}

// subscribeFeedURL checks --feed as the web form does (subscribe.
// NormalizeFeedURL: "example.com/blog" is https://example.com/blog).
func subscribeFeedURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("%w: --feed is required", errUsage)
	}
	u, msg := subscribe.NormalizeFeedURL(raw)
	if msg != "" {
		return "", fmt.Errorf("%w: --feed %q: %s", errUsage, raw, msg)
	}
	return u, nil
}

// findFeed fetches --feed as typed and finds the feed (subscribe.FindTyped,
// no budget: the operator is not limited); what is wrong is one line
// naming the address and the precise reason, and a page with several feeds
// lists them for the operator to pick one.
func findFeed(ctx context.Context, svc *subscribe.Service, feed string) (subscribe.Found, error) {
	found, err := svc.FindTyped(ctx, feed, nil)
	var fe subscribe.FieldError
	if errors.As(err, &fe) {
		return found, fmt.Errorf("--feed %s: %s", feed, fe.Why())
	}
	if err != nil {
		return found, err
	}
	if len(found.Candidates) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "--feed %s is a page that advertises %d feeds; pick one:", feed, len(found.Candidates))
		for _, c := range found.Candidates {
			fmt.Fprintf(&b, "\n  --feed %s", c.URL)
			if c.Title != "" {
				fmt.Fprintf(&b, "  (%s)", c.Title)
			}
		}
		return found, errors.New(b.String())
	}
	return found, nil
}

// forecastJSON is the forecast as the command prints it: posts and credits
// a month, rounded as the web says them ("instant" and each preset key),
// "capped" when the rate was cut (instant is then a lower bound); or
// "not_enough_history" with the reason.
func forecastJSON(fc forecast.Forecast) map[string]any {
	if fc.NotEnoughHistory {
		return map[string]any{"not_enough_history": true, "reason": fc.Reason}
	}
	out := map[string]any{"posts_per_month": math.Round(fc.PostsPerMonth*10) / 10, "instant": fc.Instant.Credits}
	for _, d := range fc.Digests {
		out[d.Preset.Key] = d.Credits
	}
	if fc.Capped {
		out["capped"] = true
	}
	return out
}
