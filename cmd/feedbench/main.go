// Command feedbench measures feedmail's hot paths — poll passes (cold, warm,
// changed), fan-out, the outbox to SMTP, digest assembly — against the
// database in FEEDMAIL_DATABASE_URL, with a fake feed farm and an SMTP sink on
// loopback, and prints a table (or JSON with --json). It lives apart from
// cmd/feedmail so the product binary links none of the test infrastructure.
//
// --scenarios steady, named alone, runs the real `feedmail serve` against
// feedfarm processes for minutes instead, and reports its CPU per poll, lag
// and memory in the steady state (steady.go, docs/benchmarks.md).
// --scenarios chaos, named alone, runs several serve processes on a private
// Postgres cluster while killing them, restarting the cluster and failing
// SMTP, feeds and webhooks, and judges loss and duplicates (chaos.go).
//
// It must not run in the tables of an existing installation: each run works
// in a schema or database file of its own (package bench).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/feedmail/feedmail/internal/testkit/bench"
)

const usage = "feedbench [--feeds N] [--items N] [--subscribers N] [--digests N] [--hosts N] [--scenarios cold,warm,changed,fanout,outbox,digest,import,import-readers,import-readers-api] [--readers N] [--dkim rsa|ed25519|off] [--cpuprofile DIR] [--keep] [--json]"

func main() {
	if code, ok := bench.RunChildRole(); ok {
		os.Exit(code) // feedbench started again as its own SMTP sink
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors answered with exit 2 and the usage line.
var errUsage = errors.New("usage")

// run parses args, runs the scenarios and returns the exit code: 0 on
// success, 2 on bad input, 1 when a scenario fails.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := bench1(ctx, args, getenv, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "feedbench: %v\nusage: %s\n       %s\n       %s\n", err, usage, steadyUsage, chaosUsage)
		return 2
	default:
		fmt.Fprintf(stderr, "feedbench: %v\n", err)
		return 1
	}
}

func bench1(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("feedbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	feeds := fs.Int("feeds", bench.DefaultFeeds, "feeds in the poll scenarios")
	items := fs.Int("items", bench.DefaultItems, "items per feed")
	subs := fs.Int("subscribers", bench.DefaultSubscribers, "instant subscribers of the fan-out feed")
	digests := fs.Int("digests", bench.DefaultDigests, "digests assembled at once")
	readers := fs.Int("readers", bench.DefaultReaders, "people of the import-readers scenario (2 feeds each of --feeds)")
	hosts := fs.Int("hosts", bench.DefaultHosts, "loopback addresses the feed farm listens on (127.0.0.1 …)")
	scenarios := fs.String("scenarios", "all", "comma-separated scenarios: "+fmt.Sprint(bench.Known())+" (all: every one but import)")
	keep := fs.Bool("keep", false, "keep the bench schema (Postgres) or SQLite file and print where it is")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	dkim := fs.String("dkim", "rsa", "outbox: DKIM key the emails are signed with: rsa (2048 bits), ed25519 or off")
	profile := fs.String("cpuprofile", "", "write a CPU profile of each scenario's timed part to DIR/<scenario>.pprof")
	steady := addSteadyFlags(fs)
	chaos := addChaosFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if strings.TrimSpace(*scenarios) == bench.Chaos {
		visited := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { visited[f.Name] = true })
		return runChaos(ctx, chaos, steady, *feeds, *hosts, visited, *asJSON, getenv, stdout, stderr)
	}
	if strings.TrimSpace(*scenarios) == bench.Steady {
		return runSteady(ctx, steady, *feeds, *hosts, *keep, *asJSON, getenv, stdout, stderr)
	}
	names, err := bench.ParseScenarios(*scenarios)
	if err != nil {
		return usageFrom(err)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"feeds", *feeds}, {"items", *items}, {"subscribers", *subs}, {"digests", *digests}, {"hosts", *hosts}, {"readers", *readers}} {
		if v.n < 1 {
			return fmt.Errorf("%w: --%s must be at least 1", errUsage, v.name)
		}
	}
	dsn := getenv("FEEDMAIL_DATABASE_URL")
	if dsn == "" {
		dsn = "sqlite://./feedmail.db"
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv("FEEDMAIL_LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL: dsn, Feeds: *feeds, Items: *items, Subscribers: *subs, Digests: *digests, Readers: *readers,
		Hosts: *hosts, Scenarios: names, Keep: *keep, ProfileDir: *profile, DKIM: *dkim, Log: log.With("part", "bench"), Progress: progressLine(stderr),
	})
	if rep != nil && len(rep.Rows) > 0 {
		write := rep.WriteTable
		if *asJSON {
			write = rep.WriteJSON
		}
		werr := write(stdout)
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

// progressLine returns a function that shows one updating line on stderr when
// it is a terminal, and does nothing otherwise.
func progressLine(stderr io.Writer) func(string) {
	f, ok := stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return func(string) {}
	}
	return func(s string) { fmt.Fprintf(f, "\r\033[K%s", s) }
}
