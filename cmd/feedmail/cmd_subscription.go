package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
)

// controlFlags registers --include, --exclude and --format on fs and
// returns a function that, after parsing, gives the controls of the flags
// given (a flag not given is nil and changes nothing; --include ”
// clears).
func controlFlags(fs *flag.FlagSet) func() store.Controls {
	include := fs.String("include", "", "only posts matching one of these comma-separated words, phrases or /regexps/ ('' clears)")
	exclude := fs.String("exclude", "", "no posts matching one of these comma-separated words, phrases or /regexps/ ('' clears)")
	format := fs.String("format", "", "how emails show a post: full, summary (first 60 words, no images), title, or article (the page behind the link)")
	return func() store.Controls {
		var c store.Controls
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "include":
				c.Include = include
			case "exclude":
				c.Exclude = exclude
			case "format":
				c.Format = format
			}
		})
		return c
	}
}

// checkControlFlags is store.CheckControls for values typed on the command
// line: it returns the checked controls, or a usage error (exit 2) saying
// which flag is wrong, since a bad filter or format is the operator's
// typing, not a failure.
func checkControlFlags(c store.Controls) (store.Controls, error) {
	out, err := store.CheckControls(c)
	if err != nil {
		return store.Controls{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	return out, nil
}

// cmdSubscription dispatches `feedmail subscription set`.
func cmdSubscription(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, "subscription", args)
}

// subscriptionSubs returns the subscription subcommands.
func subscriptionSubs() []subcommand {
	return []subcommand{{"set", "--email E --feed URL [--channel NAME [--target URL]] [--include TERMS] [--exclude TERMS] [--format full|summary|title|article]",
		"set a subscription's filters and format, the flags given only; prints its settings. A person who gets the feed in several places picks the delivery with --channel and --target", cmdSubscriptionSet}}
}

// cmdSubscriptionSet changes the filters and format of a person's
// subscription to a feed, the flags given only; bad input is one line and
// changes nothing. It prints the subscription's settings as JSON. Of a
// feed the person gets in several places, --channel and --target pick the
// delivery; without them the feed's only delivery is changed, and several
// are a usage error listing them (filters differ per delivery, so none is
// changed by surprise).
func cmdSubscriptionSet(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "subscription set")
	email := fs.String("email", "", "the person's email address")
	feedURL := fs.String("feed", "", "the feed's URL")
	pick := deliveryFlags(fs, "the feed's only delivery")
	controls := controlFlags(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	feed := strings.TrimSpace(*feedURL)
	if feed == "" {
		return fmt.Errorf("%w: --feed is required", errUsage)
	}
	c, err := checkControlFlags(controls())
	if err != nil {
		return err
	}
	if c == (store.Controls{}) {
		return fmt.Errorf("%w: give --include, --exclude or --format", errUsage)
	}
	s, u, err := a.lookUpUser(ctx, addr)
	if err != nil {
		return err
	}
	subs, err := feedDeliveries(ctx, s, u, feed)
	if err != nil {
		return err
	}
	picked, err := pickDeliveries(subs, *pick, false, u.Email, feed)
	if err != nil {
		return err
	}
	sub := picked[0]
	got, err := s.SetSubscriptionControls(ctx, u.ID, sub.ID, c)
	if err != nil {
		return err
	}
	out := map[string]any{"email": u.Email, "feed": sub.FeedURL, "subscription": got.ID,
		"include": got.IncludeTerms, "exclude": got.ExcludeTerms, "format": got.Format, "channel": orEmail(got.Channel)}
	if got.Target != "" {
		out["target"] = got.Target
	}
	return a.printJSON(out)
}
