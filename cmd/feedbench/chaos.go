package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/bench"
)

const chaosUsage = "feedbench --scenarios chaos [--feeds N] [--hosts H] [--processes P] [--minutes M] [--seed S] [--publish-share S] [--hub-share F] [--drain D] [--log-dir DIR] [--json]"

// chaosFlags are the flags only --scenarios chaos reads (besides --feeds,
// --hosts, --minutes and --publish-share).
type chaosFlags struct {
	processes int
	seed      int64
	hubShare  float64
	drain     time.Duration
	logDir    string
}

// addChaosFlags registers the chaos scenario's flags on fs.
func addChaosFlags(fs *flag.FlagSet) *chaosFlags {
	f := &chaosFlags{}
	fs.IntVar(&f.processes, "processes", bench.DefaultChaosProcesses, "chaos: serve processes sharing the database")
	fs.Int64Var(&f.seed, "seed", bench.DefaultChaosSeed, "chaos: seed of the fault schedule and the sinks' faults")
	fs.Float64Var(&f.hubShare, "hub-share", bench.DefaultChaosHubShare, "chaos: share of feeds advertising a WebSub hub, pushed (0: none, every feed polled)")
	fs.DurationVar(&f.drain, "drain", bench.DefaultChaosDrain, "chaos: longest wait after the window for every delivery")
	fs.StringVar(&f.logDir, "log-dir", "", "chaos: write each serve's log to this folder (serve-N.log)")
	return f
}

// runChaos runs the chaos scenario with the flags given (visited: the
// flags set on the command line; the others take chaos's defaults) and
// writes its report. A run the oracle fails is an error (exit 1).
func runChaos(ctx context.Context, f *chaosFlags, st *steadyFlags, feeds, hosts int, visited map[string]bool, asJSON bool,
	getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := bench.ChaosConfig{Processes: f.processes, Seed: f.seed, Drain: f.drain, LogDir: f.logDir, HubShare: f.hubShare}
	if f.hubShare <= 0 {
		cfg.HubShare = -1 // no hub
	}
	if visited["feeds"] {
		cfg.Feeds = feeds
	}
	if visited["hosts"] {
		cfg.Hosts = hosts
	}
	if visited["minutes"] {
		cfg.Window = time.Duration(st.minutes * float64(time.Minute))
	}
	if visited["publish-share"] {
		cfg.PublishShare = st.share
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv("FEEDMAIL_LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("part", "bench")
	cfg.Progress = progressLine(stderr)
	rep, err := bench.RunChaos(ctx, cfg)
	if errors.Is(err, bench.ErrBadConfig) {
		return usageFrom(err)
	}
	if rep != nil && rep.Expected > 0 {
		write := rep.WriteTable
		if asJSON {
			write = rep.WriteJSON
		}
		if werr := write(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && rep != nil && len(rep.Failed) > 0 {
		err = fmt.Errorf("chaos: the oracle failed the run: %v", rep.Failed)
	}
	return err
}
