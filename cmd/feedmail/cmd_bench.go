package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/bench"
)

const benchUsage = "[--feeds N] [--items N] [--subscribers N] [--digests N] [--hosts N] [--scenarios cold,warm,changed,fanout,outbox,digest] [--keep] [--json]"

// cmdBench runs the benchmark scenarios of package bench against
// FEEDMAIL_DATABASE_URL (in a fresh schema or SQLite file, removed
// afterwards unless --keep) with a feed farm and an SMTP sink on loopback,
// and prints a table (or JSON with --json). Progress goes to stderr when it
// is a terminal; the workers' logs go to stderr at FEEDMAIL_LOG_LEVEL.
func cmdBench(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "bench")
	feeds := fs.Int("feeds", bench.DefaultFeeds, "feeds in the poll scenarios")
	items := fs.Int("items", bench.DefaultItems, "items per feed")
	subs := fs.Int("subscribers", bench.DefaultSubscribers, "instant subscribers of the fan-out feed")
	digests := fs.Int("digests", bench.DefaultDigests, "digests assembled at once")
	hosts := fs.Int("hosts", bench.DefaultHosts, "loopback addresses the feed farm listens on (127.0.0.1 …)")
	scenarios := fs.String("scenarios", "all", "comma-separated scenarios: "+fmt.Sprint(bench.All()))
	keep := fs.Bool("keep", false, "keep the bench schema (Postgres) or SQLite file and print where it is")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	names, err := bench.ParseScenarios(*scenarios)
	if err != nil {
		return usageFrom(err)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"feeds", *feeds}, {"items", *items}, {"subscribers", *subs}, {"digests", *digests}, {"hosts", *hosts}} {
		if v.n < 1 {
			return fmt.Errorf("%w: --%s must be at least 1", errUsage, v.name)
		}
	}
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL: a.cfg.DatabaseURL, Feeds: *feeds, Items: *items, Subscribers: *subs, Digests: *digests,
		Hosts: *hosts, Scenarios: names, Keep: *keep, Log: a.log.With("part", "bench"), Progress: a.progressLine(),
	})
	if rep != nil && len(rep.Rows) > 0 {
		var werr error
		if *asJSON {
			werr = rep.WriteJSON(a.stdout)
		} else {
			werr = rep.WriteTable(a.stdout)
		}
		if werr != nil && err == nil {
			err = werr
		}
	}
	if errors.Is(err, bench.ErrBadConfig) {
		return usageFrom(err)
	}
	return err
}

// usageFrom turns a bench configuration error into a usage error with the
// detail only ("unknown scenario …").
func usageFrom(err error) error {
	return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), bench.ErrBadConfig.Error()+": "))
}
