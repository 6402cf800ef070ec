package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

const feedRecoverUsage = "URL [--apply]"

const feedMoveUsage = "--from URL --to URL [--dry-run]"

// cmdFeedRecover runs a rediscovery now for the feed at URL (the
// operator's call: a feed whose last poll failed or that is stale, without
// waiting for the ailing rule) and prints what it found as JSON; --apply
// carries the verdict out (readers moved, offered or told), as the poller
// role does by itself for an ailing feed.
func cmdFeedRecover(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "feed recover")
	apply := fs.Bool("apply", false, "carry the verdict out: move, offer or tell the readers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 1 { // flags after the URL
		if err := parseFlags(fs, rest[1:]); err != nil {
			return err
		}
		rest = append(rest[:1], fs.Args()...)
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: give exactly one feed URL", errUsage)
	}
	raw, err := feedURLArg(rest[0])
	if err != nil {
		return err
	}
	s, f, err := a.knownFeed(ctx, raw)
	if err != nil {
		return err
	}
	p, err := a.newPoller(s, "cli", nil)
	if err != nil {
		return err
	}
	defer p.Close()
	rep, err := p.Recover(ctx, f.ID, poller.RecoverOptions{Operator: true, Apply: *apply})
	if err != nil {
		return err
	}
	return a.printJSON(rep)
}

// cmdFeedMove moves every reader of --from to --to: the operator's act
// (a verified publisher does the same on their page). --to is fetched once
// and must be a feed; without posts in common the move is made with a
// warning in the JSON. --dry-run only checks.
func cmdFeedMove(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "feed move")
	from := fs.String("from", "", "the feed's current URL (a feed feedmail knows)")
	to := fs.String("to", "", "its new URL")
	dry := fs.Bool("dry-run", false, "check the new address and print the same-feed check; move nobody")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return fmt.Errorf("%w: --from and --to are required", errUsage)
	}
	fromURL, err := feedURLArg(*from)
	if err != nil {
		return err
	}
	toURL, err := feedURLArg(*to)
	if err != nil {
		return err
	}
	if fromURL == toURL {
		return fmt.Errorf("%w: --from and --to are the same address", errUsage)
	}
	s, _, err := a.knownFeed(ctx, fromURL)
	if err != nil {
		return err
	}
	p, err := a.newPoller(s, "cli", nil)
	if err != nil {
		return err
	}
	defer p.Close()
	rep, err := p.MoveFeed(ctx, fromURL, toURL, store.MoveOperator, *dry)
	if errors.Is(err, poller.ErrNotMovable) {
		return fmt.Errorf("cannot move the readers of %s to %s: %w", fromURL, toURL, err)
	}
	if err != nil {
		return err
	}
	return a.printJSON(rep)
}
