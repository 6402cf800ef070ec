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

const steadyUsage = "feedbench --scenarios steady [--feeds N] [--hosts H] [--cadence D] [--minutes M] [--publish-share S] [--warmup W] [--warm-start] [--pause D] [--keep] [--json]"

// steadyFlags are the flags only --scenarios steady reads.
type steadyFlags struct {
	cadence time.Duration
	minutes float64
	share   float64
	warmup  string
	bare    time.Duration
	warm    bool
	pause   time.Duration
}

// addSteadyFlags registers the steady scenario's flags on fs.
func addSteadyFlags(fs *flag.FlagSet) *steadyFlags {
	f := &steadyFlags{}
	fs.DurationVar(&f.cadence, "cadence", bench.DefaultCadence, "steady: each feed's poll interval")
	fs.Float64Var(&f.minutes, "minutes", bench.DefaultWindow.Minutes(), "steady: minutes measured after the warm-up")
	fs.Float64Var(&f.share, "publish-share", bench.DefaultPublishShare, "steady: share of feeds publishing a new post each cadence")
	fs.StringVar(&f.warmup, "warmup", "", "steady: warm-up before the window (default one cadence; 0 for none)")
	fs.BoolVar(&f.warm, "warm-start", false, "steady: do every feed's first poll in a batch pass before serve starts")
	fs.DurationVar(&f.pause, "pause", 0, "steady: after the window, stop serve as if for this long, start it again and measure the catch-up")
	fs.DurationVar(&f.bare, "bare", 0, "steady: how long the paced bare loop runs (default the window, at most 1m)")
	return f
}

// runSteady runs the steady scenario with the common flags' values and
// writes its report (JSON with asJSON).
func runSteady(ctx context.Context, f *steadyFlags, feeds, hosts int, keep, asJSON bool, getenv func(string) string,
	stdout, stderr io.Writer) error {
	var warm time.Duration
	if f.warmup != "" {
		d, err := time.ParseDuration(f.warmup)
		if f.warmup == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return fmt.Errorf("%w: --warmup %q is not a duration ≥ 0", errUsage, f.warmup)
		}
		warm = d
		if d == 0 {
			warm = -1 // none
		}
	}
	if f.minutes <= 0 {
		return fmt.Errorf("%w: --minutes must be above 0", errUsage)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv("FEEDMAIL_LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	rep, err := bench.RunSteady(ctx, bench.SteadyConfig{
		DatabaseURL: getenv("FEEDMAIL_DATABASE_URL"), Feeds: feeds, Hosts: hosts, Cadence: f.cadence,
		Window: time.Duration(f.minutes * float64(time.Minute)), Warmup: warm, PublishShare: f.share,
		Bare: f.bare, WarmStart: f.warm, Pause: f.pause, Keep: keep, Log: log.With("part", "bench"), Progress: progressLine(stderr),
	})
	if errors.Is(err, bench.ErrBadConfig) {
		return usageFrom(err)
	}
	if rep != nil && rep.Polls > 0 {
		write := rep.WriteTable
		if asJSON {
			write = rep.WriteJSON
		}
		if werr := write(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}
