package bench

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// The steady scenario (RunSteady) runs the real `feedmail serve` (roles
// web, poller, mailer) as a child process against a fresh Postgres
// database, with the feed farm in feedfarm child processes (one per
// loopback host) and the SMTP sink in this process, so that the CPU
// counted for feedmail is its own. It seeds Feeds feeds with instant
// subscribers, each asking for Cadence (Cache-Control max-age; the
// poller's default and floor is 5 min for a fast feed with validators).
// Cold, every feed is due at once and never polled, as after an import
// (importDue); after a warm start they are due spread evenly over the
// first cadence. PublishShare of them publish a new post each cadence. After the warm-up it measures Window and reports
// what SteadyReport holds. It is not part of All: name it alone.

// Steady is the steady-state scenario's name (cmd/feedbench --scenarios steady).
const Steady = "steady"

// Defaults of SteadyConfig.
const (
	DefaultCadence      = 5 * time.Minute
	DefaultWindow       = 5 * time.Minute
	DefaultPublishShare = 0.1
	// subsPerFeed instant subscriptions per feed; each person follows
	// feedsPerPerson feeds.
	subsPerFeed    = 2
	feedsPerPerson = 4
	// pollFloor is the poller's shortest interval (a fast feed with
	// validators): a cadence below it holds for the first round only.
	pollFloor = 5 * time.Minute
)

// SteadyConfig says what RunSteady runs. Zero values take the defaults.
type SteadyConfig struct {
	// DatabaseURL is a Postgres server URL; the run creates its own
	// database on that server and drops it afterwards (unless Keep).
	DatabaseURL string
	Feeds       int           // feeds followed (default 2000)
	Hosts       int           // loopback hosts, one feedfarm process each (default 8)
	Cadence     time.Duration // each feed's poll interval (default 5 min)
	Window      time.Duration // the measured window (default 5 min)
	// Warmup is how long serve runs before the window (zero: one cadence;
	// negative: none). After a warm-up the window also waits, for up to
	// one more cadence, until every feed has had its first (cold) poll.
	Warmup time.Duration
	// PublishShare is the share of feeds that publish a new post each
	// cadence, in [0, 1] (the CLI's default is DefaultPublishShare).
	PublishShare float64
	// Bare is how long the paced bare loop runs (default: the window, at
	// most one minute).
	Bare time.Duration
	// WarmStart does the first round before serve starts, as one batch
	// pass of the poller in feedbench (see warmStart), so that serve's
	// warm-up and window see the steady state at sizes whose first round
	// serve could not finish in a session. Off, serve polls every feed
	// first (a full 200 with every item) during the warm-up.
	WarmStart bool
	// Pause, if set, stops serve after the window and makes the world look
	// as if Pause had passed (the store's times moved back, the farms'
	// posts of that time published), then starts serve again and measures
	// its catch-up (CatchUp in the report).
	Pause time.Duration
	// Keep leaves the database in place.
	Keep bool
	// Log receives the run's own log lines (default: discarded).
	Log *slog.Logger
	// Progress, if set, is called with a one-line status ("" clears it).
	Progress func(string)
}

// fill applies the defaults and checks the values; errors wrap ErrBadConfig.
func (c *SteadyConfig) fill() error {
	if c.Feeds == 0 {
		c.Feeds = DefaultFeeds
	}
	if c.Hosts == 0 {
		c.Hosts = DefaultHosts
	}
	if c.Cadence == 0 {
		c.Cadence = DefaultCadence
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Warmup == 0 {
		c.Warmup = c.Cadence
	}
	if c.Bare == 0 {
		c.Bare = min(c.Window, time.Minute)
	}
	switch {
	case c.Feeds < 10:
		return fmt.Errorf("%w: feeds must be at least 10", ErrBadConfig)
	case c.Hosts < 1 || c.Hosts > 200:
		return fmt.Errorf("%w: hosts must be between 1 and 200", ErrBadConfig)
	case c.Hosts > c.Feeds:
		return fmt.Errorf("%w: hosts must not outnumber feeds", ErrBadConfig)
	case c.Cadence < time.Second || c.Window < time.Second || c.Bare < time.Second:
		return fmt.Errorf("%w: cadence, window and bare loop must be at least a second", ErrBadConfig)
	case c.Pause < 0:
		return fmt.Errorf("%w: pause must not be negative", ErrBadConfig)
	case c.PublishShare < 0 || c.PublishShare > 1:
		return fmt.Errorf("%w: publish share must be between 0 and 1", ErrBadConfig)
	case !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://"):
		return fmt.Errorf("%w: the steady scenario needs a Postgres URL in FEEDMAIL_DATABASE_URL (it measures the server's backends)", ErrBadConfig)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	return nil
}

// RunSteady runs the steady scenario and returns its report. Every child
// process is stopped and the database dropped (unless Keep) before it
// returns, also when ctx ends early; a child that fails is reported with
// its last log lines. The report comes back with what was measured so far
// when a later step fails.
func RunSteady(ctx context.Context, cfg SteadyConfig) (*SteadyReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	s := &steady{cfg: cfg}
	defer s.close()
	rep := newSteadyReport(cfg)
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"build", s.build},
		{"database", s.createDB},
		{"feed farms", s.startFarms},
		{"seed", s.seed},
		{"warm start", s.warmStart},
		{"import", s.importDue},
		{"serve", s.startServe},
		{"warm-up", s.warmUp},
		{"window", func(ctx context.Context) error { return s.window(ctx, rep) }},
		{"pause", s.pause},
		{"catch-up", func(ctx context.Context) error { return s.catchUp(ctx, rep) }},
		{"stop serve", s.stopServe},
		{"bare loop", func(ctx context.Context) error { return s.bareLoop(ctx, rep) }},
	}
	var err error
	for _, st := range steps {
		cfg.Log.Info("steady: step", "step", st.name, "elapsed", time.Since(start).Round(time.Second))
		if err = st.fn(ctx); err != nil {
			err = fmt.Errorf("steady %s: %w", st.name, err)
			break
		}
	}
	cfg.Progress("")
	rep.finish(s, time.Since(start))
	return rep, err
}
