// Package bench runs feedmail's benchmark scenarios in one process, against
// the database an operator configured, a feed farm and an SMTP sink on
// loopback, and reports numbers a person can compare across machines. It is
// what `feedmail bench` runs; tests run the same scenarios small.
//
// # Scenarios
//
//   - cold: one poll pass over Feeds feeds seen for the first time (Items
//     items each): fetch, parse, record every item as seen, write each
//     feed's state.
//   - warm: one pass over the same feeds, all answering 304.
//   - changed: one pass where every tenth feed has published one new item:
//     304s, 200s parsed, the new items recorded and one instant email queued
//     per new item (each fleet feed has one instant subscriber).
//   - fanout: one new item of one feed with Subscribers instant subscribers,
//     polled and committed (the item and Subscribers outbox rows in one
//     transaction).
//   - outbox: every queued email claimed, rendered, charged, sent over SMTP
//     to the sink and marked sent.
//   - digest: Digests digests, each with 20 items from 8 feeds waiting, due
//     at once: assembled into issues, priced and queued.
//
// # Baselines
//
// The poll scenarios are compared with a bare net/http loop making the same
// requests (conditional where feedmail's are, with the validators feedmail
// holds) with the same number of workers, reading every body and nothing
// else; the outbox with a bare go-mail loop sending the same number of
// pre-built messages over one connection to the same sink. Ratio is
// feedmail's throughput divided by the baseline's: 1 would mean feedmail's
// bookkeeping costs nothing. Fan-out and digest assembly are database work
// with no meaningful bare loop.
//
// # How things are measured (choices where the design is silent)
//
//   - Time is wall time of the timed part only; seeding, priming and checks
//     are not timed. Each scenario checks its outcome (feeds polled, items
//     stored, emails at the sink, issues queued) and fails loudly otherwise.
//   - Simulated time: the store, poller, farm and mailer run on one fake
//     clock that the bench moves forward between passes (one hour), so a
//     pass finds every feed due without waiting; the network and the
//     database run in real time.
//   - Database round trips are counted by wrapping gorm's connection pool
//     (see countingPool): every statement (Exec, Query, QueryRow, Prepare)
//     and every BEGIN, COMMIT and ROLLBACK is one trip, whether it comes
//     through gorm or through the store's raw database/sql calls. A Postgres
//     driver's hidden prepare of a statement text it has not seen on a
//     connection is not counted. Trips per unit = trips in the timed part ÷
//     units (feeds, emails, digests).
//   - Peak RSS is VmHWM from /proc/self/status, reset (echo 5 >
//     /proc/self/clear_refs) right before each timed part, after a GC, so it
//     is the peak of that part. It includes the farm and the SMTP sink,
//     which run in the same process. Where /proc is unavailable it is the Go
//     runtime's total memory mapped, marked "(go)".
//   - The farm listens on Hosts loopback addresses (127.0.0.1 … 127.0.0.N)
//     and the feeds are spread over them round robin: the poller keeps at
//     most 2 requests in flight per host, so with 8 hosts its 16 workers can
//     all be busy, as they would be against many publishers.
//   - The database is fresh: on Postgres a schema bench_<random> in the
//     configured database, dropped afterwards; on SQLite a file in a
//     temporary folder, removed afterwards. Keep leaves either in place and
//     the report says where.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Scenario names, in the order they run.
const (
	Cold    = "cold"
	Warm    = "warm"
	Changed = "changed"
	FanOut  = "fanout"
	Outbox  = "outbox"
	Digest  = "digest"
)

// All lists every scenario in running order.
func All() []string { return []string{Cold, Warm, Changed, FanOut, Outbox, Digest} }

// ErrBadConfig wraps configuration errors.
var ErrBadConfig = errors.New("bench: bad configuration")

// Config says what to run. Zero sizes take the defaults of `feedmail bench`.
type Config struct {
	// DatabaseURL is a Postgres server/database URL or sqlite://…; the bench
	// works in a fresh schema or file next to it, never in its tables.
	DatabaseURL string
	Feeds       int // fleet size for the poll scenarios (default 2000)
	Items       int // items per feed (default 20)
	Subscribers int // instant subscribers of the fan-out feed (default 10000)
	Digests     int // digests assembled at once (default 10000)
	// Hosts is how many loopback addresses the farm listens on (default 8).
	Hosts int
	// Scenarios to run, a subset of All (default all), in All's order.
	Scenarios []string
	// Keep leaves the bench schema or SQLite file in place.
	Keep bool
	// Log receives the workers' logs (default: discarded).
	Log *slog.Logger
	// Progress, if set, is called with a one-line status during long parts
	// ("" clears it); `feedmail bench` shows it on a terminal.
	Progress func(string)
}

// Defaults of Config.
const (
	DefaultFeeds       = 2000
	DefaultItems       = 20
	DefaultSubscribers = 10000
	DefaultDigests     = 10000
	DefaultHosts       = 8
	// Concurrency is the poller's worker count (poller.DefaultConcurrency)
	// and the bare loop's.
	Concurrency = 16
	// digestFeeds and digestItems shape each digest: 20 items from 8 feeds.
	digestFeeds = 8
	digestItems = 20
)

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
		def(&c.Hosts, DefaultHosts, "hosts"),
	} {
		if e != nil {
			return e
		}
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
		if !slices.Contains(All(), s) {
			return fmt.Errorf("%w: unknown scenario %q (known: %s)", ErrBadConfig, s, strings.Join(All(), ", "))
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

// ParseScenarios splits a comma list ("cold,warm"; "all" or "" for all).
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
		if !slices.Contains(All(), s) {
			return nil, fmt.Errorf("%w: unknown scenario %q (known: %s)", ErrBadConfig, s, strings.Join(All(), ", "))
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

// Baseline is the bare loop a scenario is compared with.
type Baseline struct {
	Name    string        `json:"name"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"rate"` // units per second
}

// Row is one scenario's result.
type Row struct {
	Scenario string        `json:"scenario"`
	Work     string        `json:"work"`  // what was timed
	Count    int           `json:"count"` // units of work
	Unit     string        `json:"unit"`  // "feeds", "emails", "digests", "rows"
	Elapsed  time.Duration `json:"elapsed_ns"`
	Rate     float64       `json:"rate"` // Count per second
	Baseline *Baseline     `json:"baseline,omitempty"`
	// Ratio is Rate / Baseline.Rate (0 without a baseline).
	Ratio float64 `json:"ratio,omitempty"`
	// Trips is the number of database round trips of the timed part;
	// TripsPer is Trips per TripUnit.
	Trips    int64   `json:"db_round_trips"`
	TripsPer float64 `json:"db_round_trips_per_unit"`
	TripUnit string  `json:"db_round_trip_unit"`
	// tripCount is the units TripsPer divides by (default Count).
	tripCount int
	// PeakRSS is the peak resident set of the timed part, in bytes;
	// RSSSource says where it came from ("VmHWM" or "go").
	PeakRSS   int64  `json:"peak_rss_bytes"`
	RSSSource string `json:"peak_rss_source"`
	// Note holds what the checks saw ("2000 × 304", "200 new items, 200 emails queued").
	Note string `json:"note,omitempty"`
}

// Machine describes where the bench ran.
type Machine struct {
	OS         string    `json:"os"`
	Arch       string    `json:"arch"`
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	GoVersion  string    `json:"go_version"`
	CPUModel   string    `json:"cpu_model,omitempty"`
	LoadAvg    string    `json:"load_average,omitempty"` // at the start, from /proc/loadavg
	LoadAvgEnd string    `json:"load_average_end,omitempty"`
	Database   string    `json:"database"` // dialect and server version
	Started    time.Time `json:"started"`
}

// Report is a whole run.
type Report struct {
	Machine  Machine `json:"machine"`
	Feeds    int     `json:"feeds"`
	Items    int     `json:"items"`
	Subs     int     `json:"subscribers"`
	Digests  int     `json:"digests"`
	Hosts    int     `json:"hosts"`
	Workers  int     `json:"poller_workers"`
	Rows     []Row   `json:"rows"`
	Where    string  `json:"kept_database,omitempty"` // set with Keep
	Duration string  `json:"total_duration"`
}

// Run runs cfg's scenarios and returns the report. A scenario that fails
// its checks ends the run with an error (the rows so far come back too).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rep := &Report{
		Machine: machine(e.dbDesc), Feeds: cfg.Feeds, Items: cfg.Items, Subs: cfg.Subscribers,
		Digests: cfg.Digests, Hosts: len(e.farms), Workers: Concurrency,
	}
	if cfg.Keep {
		rep.Where = e.keptDesc()
	}
	run := map[string]func(context.Context) (Row, error){
		Cold: e.cold, Warm: e.warm, Changed: e.changed, FanOut: e.fanout, Outbox: e.outbox, Digest: e.digest,
	}
	for _, name := range All() {
		if !slices.Contains(cfg.Scenarios, name) {
			continue
		}
		cfg.Log.Info("bench: scenario", "name", name)
		row, err := run[name](ctx)
		cfg.Progress("")
		if err != nil {
			rep.Machine.LoadAvgEnd = loadAvg()
			rep.Duration = time.Since(start).Round(time.Millisecond).String()
			return rep, fmt.Errorf("bench %s: %w", name, err)
		}
		row.Scenario = name
		if row.Elapsed > 0 {
			row.Rate = float64(row.Count) / row.Elapsed.Seconds()
		}
		if row.Baseline != nil && row.Baseline.Elapsed > 0 {
			row.Baseline.Rate = float64(row.Count) / row.Baseline.Elapsed.Seconds()
			if row.Baseline.Rate > 0 {
				row.Ratio = row.Rate / row.Baseline.Rate
			}
		}
		if row.TripUnit == "" {
			row.TripUnit = strings.TrimSuffix(row.Unit, "s")
		}
		if row.tripCount == 0 {
			row.tripCount = row.Count
		}
		if row.tripCount > 0 {
			row.TripsPer = float64(row.Trips) / float64(row.tripCount)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Machine.LoadAvgEnd = loadAvg()
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

// machine describes this machine.
func machine(db string) Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), LoadAvg: loadAvg(), Database: db, Started: time.Now().UTC().Truncate(time.Second)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAvg is the first three fields of /proc/loadavg ("" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as an aligned table with a header saying
// what machine and database it ran on.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "feedmail bench, %s\n", m.Started.Format(time.RFC3339))
	cpu := m.CPUModel
	if cpu == "" {
		cpu = "CPU"
	}
	fmt.Fprintf(w, "machine:  %s/%s, %d × %s, GOMAXPROCS %d, %s", m.OS, m.Arch, m.CPUs, cpu, m.GOMAXPROCS, m.GoVersion)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, ", load average %s at start, %s at end", m.LoadAvg, m.LoadAvgEnd)
	}
	fmt.Fprintf(w, "\ndatabase: %s\n", m.Database)
	fmt.Fprintf(w, "sizes:    %d feeds × %d items on %d loopback hosts, %d poller workers; fan-out to %d subscribers; %d digests × %d items from %d feeds\n\n",
		r.Feeds, r.Items, r.Hosts, r.Workers, r.Subs, r.Digests, digestItems, digestFeeds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\t count\t time\t rate\t bare loop\t ratio\t DB trips\t trips/unit\t peak RSS\t")
	for _, row := range r.Rows {
		bare, ratio := "—", "—"
		if row.Baseline != nil {
			bare = rate(row.Baseline.Rate, row.Unit)
			ratio = fmt.Sprintf("%.2f", row.Ratio)
		}
		rss := mib(row.PeakRSS)
		if row.RSSSource == "go" {
			rss += " (go)"
		}
		fmt.Fprintf(tw, "%s\t %d %s\t %s\t %s\t %s\t %s\t %d\t %.2f/%s\t %s\t\n", row.Scenario, row.Count, row.Unit,
			dur(row.Elapsed), rate(row.Rate, row.Unit), bare, ratio, row.Trips, row.TripsPer, row.TripUnit, rss)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, row := range r.Rows {
		fmt.Fprintf(w, "%-8s %s", row.Scenario, row.Work)
		if row.Baseline != nil {
			fmt.Fprintf(w, "; bare loop: %s", row.Baseline.Name)
		}
		if row.Note != "" {
			fmt.Fprintf(w, " (%s)", row.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nratio = feedmail's rate ÷ the bare loop's; trips = SQL statements + BEGIN/COMMIT of the timed part; peak RSS of the whole process (farm and SMTP sink included)\n")
	if r.Where != "" {
		fmt.Fprintf(w, "kept: %s\n", r.Where)
	}
	fmt.Fprintf(w, "total %s\n", r.Duration)
	return nil
}

func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func rate(r float64, unit string) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f %s/s", r, unit)
	case r >= 10:
		return fmt.Sprintf("%.1f %s/s", r, unit)
	}
	return fmt.Sprintf("%.2f %s/s", r, unit)
}

func mib(b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
