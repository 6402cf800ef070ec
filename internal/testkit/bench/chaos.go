package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// The chaos scenario (RunChaos) runs Processes real `feedmail serve`
// processes (every role) on one database of a private Postgres cluster it
// starts itself, with instant, digest and webhook readers, and injects
// faults on a seeded schedule for the whole window: kill -9 of a random
// serve (restarted a few seconds later), an immediate restart of the
// cluster, an SMTP sink that drops the connection after the final dot,
// answers 4xx or answers slowly, feed hosts that reset, hang or answer
// 500, webhook receivers that answer 500 or hang. After the window the
// faults stop and the run drains; then the oracle (chaos_oracle.go)
// judges what the farm published against what the sink and the receiver
// took in. It is not part of All: name it alone.

// Chaos is the chaos scenario's name (cmd/feedbench --scenarios chaos).
const Chaos = "chaos"

// Defaults of ChaosConfig.
const (
	DefaultChaosFeeds     = 2000
	DefaultChaosProcesses = 3
	DefaultChaosWindow    = 3 * time.Minute
	DefaultChaosSeed      = 42
	DefaultChaosShare     = 0.5
	DefaultChaosDrain     = 10 * time.Minute
)

// ChaosConfig says what RunChaos runs. Zero values take the defaults.
type ChaosConfig struct {
	Feeds     int           // feeds followed (default 2000)
	Hosts     int           // loopback hosts, one feedfarm process each (default 4)
	Processes int           // serve processes (default 3)
	Window    time.Duration // the fault window (default 3 min)
	Seed      int64         // the fault schedule's seed (default 42)
	// PublishShare is the share of feeds publishing a post each 5 min.
	PublishShare float64
	// KillEvery and PGEvery are the mean times between kills of a serve
	// (default 1 min) and between restarts of the cluster (default 10 min;
	// a window shorter than twice that gets one in its middle).
	KillEvery, PGEvery time.Duration
	// HubShare is the share of feeds that advertise a WebSub hub
	// (hubtest) and are pushed; the rest are polled (default 0.5;
	// negative: no hub).
	HubShare float64
	// Drain is the longest wait after the window for every expected
	// delivery (default 10 min).
	Drain time.Duration
	// Bare is how long the paced bare loop runs at the end (default 30 s;
	// negative: none).
	Bare time.Duration
	// LogDir, if set, receives each serve's log (serve-N.log, across its
	// restarts).
	LogDir string
	Log    *slog.Logger
	// Progress, if set, is called with a one-line status ("" clears it).
	Progress func(string)
}

// fill applies the defaults and checks the values; errors wrap ErrBadConfig.
func (c *ChaosConfig) fill() error {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Feeds == 0 {
		c.Feeds = DefaultChaosFeeds
	}
	if c.Hosts == 0 {
		c.Hosts = 4
	}
	if c.Processes == 0 {
		c.Processes = DefaultChaosProcesses
	}
	if c.Seed == 0 {
		c.Seed = DefaultChaosSeed
	}
	if c.HubShare == 0 {
		c.HubShare = DefaultChaosHubShare
	}
	if c.PublishShare == 0 {
		c.PublishShare = DefaultChaosShare
	}
	def(&c.Window, DefaultChaosWindow)
	def(&c.KillEvery, time.Minute)
	def(&c.PGEvery, 10*time.Minute)
	def(&c.Drain, DefaultChaosDrain)
	def(&c.Bare, 30*time.Second)
	switch {
	case c.Feeds < 10 || c.Hosts < 1 || c.Hosts > 200 || c.Hosts > c.Feeds:
		return fmt.Errorf("%w: feeds must be at least 10 and hosts between 1 and min(200, feeds)", ErrBadConfig)
	case c.Processes < 1 || c.Processes > 16:
		return fmt.Errorf("%w: processes must be between 1 and 16", ErrBadConfig)
	case c.Window < 30*time.Second:
		return fmt.Errorf("%w: the window must be at least 30 s", ErrBadConfig)
	case c.HubShare > 1:
		return fmt.Errorf("%w: hub share must be at most 1", ErrBadConfig)
	case c.PublishShare <= 0 || c.PublishShare > 1:
		return fmt.Errorf("%w: publish share must be above 0 and at most 1", ErrBadConfig)
	case c.KillEvery < 5*time.Second || c.PGEvery < 30*time.Second:
		return fmt.Errorf("%w: kills at most every 5 s, cluster restarts at most every 30 s", ErrBadConfig)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	return nil
}

// RunChaos runs the chaos scenario and returns its report. Every child
// process and the private cluster are stopped before it returns, also
// when ctx ends early. The report's Failed says whether the oracle found
// a loss, a duplicate outside the SMTP window or a wrong charge; the
// error is for a run that could not be judged.
func RunChaos(ctx context.Context, cfg ChaosConfig) (*ChaosReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	c := newChaos(cfg)
	defer c.close()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"build", c.s.build},
		{"cluster", c.startCluster},
		{"database", c.s.createDB},
		{"sinks", c.startSinks},
		{"hub", c.startHub},
		{"feed farms", c.s.startFarms},
		{"seed", c.seed},
		{"warm start", c.s.warmStart},
		{"serve", c.startServes},
		{"window", c.window},
		{"drain", c.drain},
		{"stop serve", c.stopServes},
		{"judge", c.judge},
		{"bare loop", c.bareLoop},
	}
	var err error
	for _, st := range steps {
		cfg.Log.Info("chaos: step", "step", st.name, "elapsed", time.Since(start).Round(time.Second))
		if err = st.fn(ctx); err != nil {
			err = fmt.Errorf("chaos %s: %w", st.name, err)
			break
		}
	}
	cfg.Progress("")
	c.rep.Took = time.Since(start).Round(time.Second).String()
	return c.rep, err
}
