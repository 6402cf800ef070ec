package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// ErrBadConfig wraps configuration errors.
var ErrBadConfig = errors.New("bench: bad configuration")

// Config says what to run. Zero sizes take the defaults of cmd/feedbench.
type Config struct {
	// DatabaseURL is a Postgres server/database URL or sqlite://…; the bench
	// works in a fresh schema or file next to it, never in its tables.
	DatabaseURL string
	Feeds       int // fleet size for the poll scenarios (default 2000)
	Items       int // items per feed (default 20)
	Subscribers int // instant subscribers of the fan-out feed (default 10000)
	Digests     int // digests assembled at once (default 10000)
	Readers     int // people of the import-readers scenario (default 10000)
	// Hosts is how many loopback addresses the farm listens on (default 8).
	Hosts int
	// Scenarios to run, a subset of Known (default All), in Known's order.
	Scenarios []string
	// Keep leaves the bench schema or SQLite file in place.
	Keep bool
	// Log receives the workers' logs (default: discarded).
	Log *slog.Logger
	// DKIM is the key the outbox signs with: "rsa" (2048 bits, the
	// default), "ed25519" or "off".
	DKIM string
	// ProfileDir, if set, gets a CPU profile of each scenario's timed part,
	// named <scenario>.pprof.
	ProfileDir string
	// Progress, if set, is called with a one-line status during long parts
	// ("" clears it); cmd/feedbench shows it on a terminal.
	Progress func(string)
}

// Defaults of Config.
const (
	DefaultFeeds       = 2000
	DefaultItems       = 20
	DefaultSubscribers = 10000
	DefaultDigests     = 10000
	DefaultReaders     = 10000
	DefaultHosts       = 8
	// Concurrency is the batch passes' fetch slots and the bare loop's
	// workers, as they have always been measured (serve's poller has
	// poller.DefaultConcurrency; on loopback its host limits bind first).
	Concurrency = 16
	// digestFeeds and digestItems shape each digest: 20 items from 8 feeds.
	digestFeeds = 8
	digestItems = 20
)

// fill applies the defaults and checks the sizes, the database URL and the
// scenario names; errors wrap ErrBadConfig.
func (c *Config) fill() error {
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 1 {
			return fmt.Errorf("%w: %s must be at least 1", ErrBadConfig, name)
		}
		return nil
	}
	for _, e := range []error{
		def(&c.Feeds, DefaultFeeds, "feeds"), def(&c.Items, DefaultItems, "items"),
		def(&c.Subscribers, DefaultSubscribers, "subscribers"), def(&c.Digests, DefaultDigests, "digests"),
		def(&c.Hosts, DefaultHosts, "hosts"), def(&c.Readers, DefaultReaders, "readers"),
	} {
		if e != nil {
			return e
		}
	}
	switch c.DKIM {
	case "":
		c.DKIM = "rsa"
	case "rsa", "ed25519", "off":
	default:
		return fmt.Errorf("%w: dkim must be rsa, ed25519 or off, not %q", ErrBadConfig, c.DKIM)
	}
	if c.Feeds < 10 {
		return fmt.Errorf("%w: feeds must be at least 10 (the changed scenario changes a tenth)", ErrBadConfig)
	}
	if c.Items > 1000 {
		return fmt.Errorf("%w: items must be at most 1000 (the poller looks at 1000 per poll)", ErrBadConfig)
	}
	if c.Hosts > 200 {
		return fmt.Errorf("%w: hosts must be at most 200", ErrBadConfig)
	}
	if c.DatabaseURL == "" {
		return fmt.Errorf("%w: no database URL", ErrBadConfig)
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = All()
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Known(), s) {
			return fmt.Errorf("%w: unknown scenario %q (known: %s)", ErrBadConfig, s, strings.Join(Known(), ", "))
		}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	return nil
}

// ParseScenarios splits a comma list ("cold,warm,import"; "all" or "" for
// All, which leaves out the scenarios run only when named).
func ParseScenarios(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return All(), nil
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if !slices.Contains(Known(), s) {
			return nil, fmt.Errorf("%w: unknown scenario %q (known: %s)", ErrBadConfig, s, strings.Join(Known(), ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no scenario named", ErrBadConfig)
	}
	return out, nil
}
