package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// SteadyReport is what RunSteady measured. CPU figures are per poll done
// in the window (per request for the bare loop); -1 stands for a figure
// that could not be had (a lag past the last bucket, no polls).
type SteadyReport struct {
	Machine      Machine `json:"machine"`
	Commit       string  `json:"commit,omitempty"` // git describe of the tree the binaries were built from
	Feeds        int     `json:"feeds"`
	Hosts        int     `json:"hosts"`
	Subscribers  int     `json:"instant_subscriptions"`
	Cadence      string  `json:"cadence"`
	Warmup       string  `json:"warmup"`
	PublishShare float64 `json:"publish_share"`
	WarmStart    bool    `json:"warm_start"` // the first round was a batch pass before serve started

	// FirstRoundS is how long serve took, from its start, to poll every
	// feed once (a cold run; -1 when it did not finish in the warm-up),
	// FirstRoundRate that as feeds a second; SteadyAfterS is when, from
	// serve's start, the oldest due feed was first under steadyLate late
	// after the first round (-1: not before the window).
	FirstRoundS    float64 `json:"first_round_s,omitempty"`
	FirstRoundRate float64 `json:"first_round_feeds_per_s,omitempty"`
	SteadyAfterS   float64 `json:"steady_after_s,omitempty"`

	Window      float64 `json:"window_s"`     // measured, seconds
	PollsNeeded float64 `json:"polls_needed"` // per second: Feeds / Cadence
	PollsDone   float64 `json:"polls_done"`   // per second
	Polls       int64   `json:"polls"`
	NotModified int64   `json:"polls_304"`
	OK          int64   `json:"polls_200_new"`
	NewItems    int64   `json:"items_new"`        // items first seen and delivered in the window
	FirstItems  int64   `json:"items_first_poll"` // items a first poll recorded in the window
	LagP50      float64 `json:"lag_p50_s"`
	LagP99      float64 `json:"lag_p99_s"`
	// IntervalP50 and IntervalP99 are the time between successive requests
	// for the same feed in the window, as the farms saw them: unlike the
	// lag, they grow with a backlog that gives feeds back unfetched.
	IntervalP50  float64 `json:"poll_interval_p50_s"`
	IntervalP99  float64 `json:"poll_interval_p99_s"`
	ServeCPU     float64 `json:"serve_cpu_ms_per_poll"`
	ServeCores   float64 `json:"serve_cores"` // CPU seconds per second
	PGCPU        float64 `json:"pg_backends_cpu_ms_per_poll"`
	PGCores      float64 `json:"pg_backends_cores"`
	PGBackends   int     `json:"pg_backends_seen"`         // serve's connections
	PGWorkers    int     `json:"pg_parallel_workers_seen"` // parallel workers of its queries (in PGCPU)
	VacuumCPU    float64 `json:"pg_autovacuum_cpu_ms_per_poll"`
	Trips        float64 `json:"db_round_trips_per_poll"`
	ConnsOpened  int64   `json:"db_connections_opened"`    // by serve's pool in the window
	ConnsDropped int64   `json:"db_connections_discarded"` // closed in the window other than for idleness or age
	Memory       Memory  `json:"serve_memory"`
	EmailsQueued float64 `json:"emails_queued_per_s"`
	EmailsSent   float64 `json:"emails_sent_per_s"`
	Bare         *Bare   `json:"bare_loop,omitempty"`
	// CatchUp is the catch-up after a pause (SteadyConfig.Pause).
	CatchUp *CatchUp `json:"catch_up,omitempty"`
	// Ratio is serve's CPU per poll ÷ the bare loop's per request;
	// RatioWithPG adds the Postgres backends' CPU to serve's.
	Ratio       float64  `json:"ratio,omitempty"`
	RatioWithPG float64  `json:"ratio_with_postgres,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	Where       string   `json:"kept_database,omitempty"`
	Duration    string   `json:"total_duration"`
}

// Memory is serve's resident set.
type Memory struct {
	SteadyBytes     int64 `json:"steady_rss_bytes"`      // median of one sample a second in the window
	PeakWindowBytes int64 `json:"peak_window_rss_bytes"` // VmHWM, reset at the window's start
	PeakRunBytes    int64 `json:"peak_run_rss_bytes"`    // VmHWM from serve's start to the window's
}

// Bare is the paced bare loop: the same conditional requests, at the same
// rate, from a plain net/http client in feedbench with serve stopped.
type Bare struct {
	Requests int         `json:"requests"`
	Rate     float64     `json:"rate"` // requests per second done
	CPU      float64     `json:"cpu_ms_per_request"`
	Statuses map[int]int `json:"statuses"`
}

func newSteadyReport(cfg SteadyConfig) *SteadyReport {
	warm := cfg.Warmup.String()
	if cfg.Warmup < 0 {
		warm = "none"
	}
	return &SteadyReport{Machine: machine(""), Feeds: cfg.Feeds, Hosts: cfg.Hosts, Subscribers: cfg.Feeds * subsPerFeed,
		Cadence: cfg.Cadence.String(), Warmup: warm, PublishShare: cfg.PublishShare, WarmStart: cfg.WarmStart,
		PollsNeeded: float64(cfg.Feeds) / cfg.Cadence.Seconds(), LagP50: -1, LagP99: -1, IntervalP50: -1, IntervalP99: -1}
}

// fill computes the window's figures from its two snapshots and the
// Postgres CPU followed in between (serve's backends with their parallel
// workers).
func (r *SteadyReport) fill(begin, end snap, backends, workers, vacuum pgCPU) {
	el := end.at.Sub(begin.at).Seconds()
	d := func(name string, labels ...string) float64 {
		return end.m.sum(name, labels...) - begin.m.sum(name, labels...)
	}
	r.Window = el
	polls := d("feedmail_polls_total")
	r.Polls = int64(polls)
	r.PollsDone = polls / el
	r.NotModified = int64(d("feedmail_polls_total", `outcome="not_modified"`))
	r.OK = int64(d("feedmail_polls_total", `outcome="ok"`))
	r.NewItems = int64(d("feedmail_items_total", `result="new"`))
	r.FirstItems = int64(d("feedmail_items_total", `result="first_poll"`))
	before, after := begin.m.buckets("feedmail_poll_lag_seconds"), end.m.buckets("feedmail_poll_lag_seconds")
	r.LagP50, r.LagP99 = finite(quantile(0.5, before, after)), finite(quantile(0.99, before, after))
	if begin.iv != nil && end.iv != nil {
		r.IntervalP50, r.IntervalP99 = finite(quantile(0.5, begin.iv, end.iv)), finite(quantile(0.99, begin.iv, end.iv))
	}
	perPoll := func(v float64) float64 {
		if polls <= 0 {
			return -1
		}
		return v / polls
	}
	cpu := end.cpu - begin.cpu
	r.ServeCPU = perPoll(float64(cpu) / float64(time.Millisecond))
	r.ServeCores = cpu.Seconds() / el
	pg := backends.total + workers.total
	r.PGCPU = perPoll(float64(pg) / float64(time.Millisecond))
	r.PGCores = pg.Seconds() / el
	r.PGBackends, r.PGWorkers = backends.seen, workers.seen
	r.VacuumCPU = perPoll(float64(vacuum.total) / float64(time.Millisecond))
	r.Trips = perPoll(d("feedmail_db_statements_total"))
	r.ConnsOpened = int64(d("feedmail_db_connections_opened_total"))
	r.ConnsDropped = int64(d("feedmail_db_connections_discarded_total"))
	r.EmailsQueued = float64(end.outboxID-begin.outboxID) / el
	r.EmailsSent = float64(end.sent-begin.sent) / el
}

// finish adds what the run learned besides the window's figures.
func (r *SteadyReport) finish(s *steady, took time.Duration) {
	r.Machine.Database = s.dbDesc
	r.Machine.LoadAvgEnd = loadAvg()
	r.Commit = s.commit
	s.noteFirstRound(r)
	if s.cfg.Cadence < pollFloor {
		s.notes = append(s.notes, fmt.Sprintf("the cadence is below the poller's %s floor: feeds come due every %s after their first poll", pollFloor, pollFloor))
	}
	r.Notes = s.notes
	if s.cfg.Keep && s.dsn != "" {
		r.Where = s.dsn
	}
	if r.Bare != nil && r.Bare.CPU > 0 && r.ServeCPU > 0 {
		r.Ratio = r.ServeCPU / r.Bare.CPU
		r.RatioWithPG = (r.ServeCPU + max(r.PGCPU, 0)) / r.Bare.CPU
	}
	r.Duration = took.Round(time.Millisecond).String()
}

// WriteJSON writes the report as indented JSON.
func (r *SteadyReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a two-column table under a header that
// says where and at what sizes it ran.
func (r *SteadyReport) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "feedbench steady, %s, commit %s\n", m.Started.Format(time.RFC3339), r.Commit)
	fmt.Fprintf(w, "machine:  %s/%s, %d × %s, %s, load average %s at start, %s at end\n", m.OS, m.Arch, m.CPUs, m.CPUModel,
		m.GoVersion, m.LoadAvg, m.LoadAvgEnd)
	fmt.Fprintf(w, "database: %s\n", m.Database)
	fmt.Fprintf(w, "sizes:    %d feeds on %d loopback hosts (one feedfarm process each), %d instant subscriptions; cadence %s, %.0f %% of feeds publish per cadence; warm-up %s, window %.0f s\n\n",
		r.Feeds, r.Hosts, r.Subscribers, r.Cadence, r.PublishShare*100, r.Warmup, r.Window)
	if r.WarmStart {
		fmt.Fprintf(w, "start:    WARM START: every feed's first poll was done by a batch pass in feedbench before serve started\n\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	if r.FirstRoundRate != 0 {
		row("first round", "%s (%s feeds/s), every feed polled once from serve's start", interval(r.FirstRoundS), perSec(r.FirstRoundRate))
		row("steady after", "%s from serve's start (oldest due feed under %s late)", interval(r.SteadyAfterS), steadyLate)
	}
	row("polls needed", "%.1f polls/s (feeds ÷ cadence)", r.PollsNeeded)
	row("polls done", "%.1f polls/s (%d polls: %s 304, %s 200 new body)", r.PollsDone, r.Polls, pct(r.NotModified, r.Polls), pct(r.OK, r.Polls))
	row("items new / first poll", "%d / %d", r.NewItems, r.FirstItems)
	row("lag p50 / p99", "%s / %s", secs(r.LagP50), secs(r.LagP99))
	row("poll interval p50 / p99", "%s / %s (as the farms saw it)", interval(r.IntervalP50), interval(r.IntervalP99))
	row("feedmail CPU", "%s/poll (%.1f %% of a core)", ms(r.ServeCPU), r.ServeCores*100)
	row("Postgres backends CPU", "%s/poll (%.1f %% of a core, %d backends, %d parallel workers)", ms(r.PGCPU), r.PGCores*100, r.PGBackends, r.PGWorkers)
	row("Postgres autovacuum CPU", "%s/poll", ms(r.VacuumCPU))
	row("DB round trips", "%.2f/poll", r.Trips)
	row("DB connections", "%d opened, %d discarded in the window", r.ConnsOpened, r.ConnsDropped)
	row("feedmail RSS", "%s steady (median), %s peak in the window, %s peak before it",
		mib(r.Memory.SteadyBytes), mib(r.Memory.PeakWindowBytes), mib(r.Memory.PeakRunBytes))
	row("emails queued / sent", "%.2f/s / %.2f/s", r.EmailsQueued, r.EmailsSent)
	if b := r.Bare; b != nil {
		row("bare loop", "%s/request at %.1f requests/s (%d requests: %d × 304, %d × 200)", ms(b.CPU), b.Rate, b.Requests, b.Statuses[304], b.Statuses[200])
		row("feedmail ÷ bare", "%.1f× CPU per poll (%.1f× with the Postgres backends)", r.Ratio, r.RatioWithPG)
	}
	if c := r.CatchUp; c != nil {
		r.writeCatchUp(row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := r.CatchUp; c != nil {
		fmt.Fprintf(w, "\ncatch-up: %s\n", r.CatchUpLine())
	}
	fmt.Fprintln(w, "\nCPU = utime + stime from /proc over the window; Postgres backends = serve's connections (application_name) and their parallel workers; round trips = feedmail_db_statements_total")
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.Where != "" {
		fmt.Fprintf(w, "kept: %s\n", r.Where)
	}
	fmt.Fprintf(w, "total %s\n", r.Duration)
	return nil
}

func pct(n, of int64) string {
	if of <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of))
}

func secs(v float64) string {
	switch {
	case v < 0:
		return "—"
	case v < 1:
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.1f s", v)
}

// interval is v seconds to the tenth under a minute ("6.2 s"), else as a
// duration to the second ("5m12s"); "—" when unknown.
func interval(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "—"
	}
	if v < 60 {
		return fmt.Sprintf("%.1f s", v)
	}
	return (time.Duration(v * float64(time.Second))).Round(time.Second).String()
}

// perSec is v to the unit, "—" when unknown.
func perSec(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f", v)
}

func ms(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.3f ms", v)
}
