package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Baseline is the bare loop a scenario is compared with.
type Baseline struct {
	Name    string        `json:"name"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"rate"` // units per second
	// CPU is this process's CPU time in the bare loop (the SMTP sink's
	// too unless the row's Sink ran apart), when measured.
	CPU time.Duration `json:"cpu_ns,omitempty"`
}

// SinkUse says where a mail scenario's SMTP sink ran: in its own process
// (Separate), whose CPU in the timed part and in the bare loop is given
// here and left out of the row's, or in this one, counted in the row's.
type SinkUse struct {
	PID      int           `json:"pid"`
	Separate bool          `json:"separate_process"`
	Received int           `json:"received"` // messages it accepted in the timed part
	CPU      time.Duration `json:"cpu_ns,omitempty"`
	BareCPU  time.Duration `json:"bare_cpu_ns,omitempty"`
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
	// CPU is the CPU time this process (the farm included; the SMTP sink
	// too unless Sink says it ran apart) used in the timed part; DBCPU that of the run's own Postgres
	// backends when the database is a local Postgres (0 otherwise).
	CPU   time.Duration `json:"cpu_ns"`
	DBCPU time.Duration `json:"db_cpu_ns,omitempty"`
	// Sink is where the mail scenarios' SMTP sink ran and what it used.
	Sink *SinkUse `json:"smtp_sink,omitempty"`
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
	fmt.Fprintf(w, "feedbench, %s\n", m.Started.Format(time.RFC3339))
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
	fmt.Fprintln(tw, "scenario\t count\t time\t rate\t bare loop\t ratio\t DB trips\t trips/unit\t peak RSS\t CPU/unit\t DB CPU/unit\t")
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
		fmt.Fprintf(tw, "%s\t %d %s\t %s\t %s\t %s\t %s\t %d\t %.2f/%s\t %s\t %s\t %s\t\n", row.Scenario, row.Count, row.Unit,
			dur(row.Elapsed), rate(row.Rate, row.Unit), bare, ratio, row.Trips, row.TripsPer, row.TripUnit, rss,
			perUnit(row.CPU, row.Count), perUnit(row.DBCPU, row.Count))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, row := range r.Rows {
		fmt.Fprintf(w, "%-8s %s", row.Scenario, row.Work)
		if row.Baseline != nil {
			fmt.Fprintf(w, "; bare loop: %s", row.Baseline.Name)
			if row.Baseline.CPU > 0 {
				fmt.Fprintf(w, ", %s CPU/%s", perUnit(row.Baseline.CPU, row.Count), strings.TrimSuffix(row.Unit, "s"))
			}
		}
		if row.Note != "" {
			fmt.Fprintf(w, " (%s)", row.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nratio = feedmail's rate ÷ the bare loop's; trips = SQL statements + BEGIN/COMMIT of the timed part; peak RSS and CPU of the bench process, farm included (outbox: the SMTP sink runs in its own process, its CPU in the note); DB CPU = the run's own backends on a local Postgres\n")
	if r.Where != "" {
		fmt.Fprintf(w, "kept: %s\n", r.Where)
	}
	fmt.Fprintf(w, "total %s\n", r.Duration)
	return nil
}

// dur formats a duration for the table (ms below a second).
func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// rate formats units per second with about three significant digits.
func rate(r float64, unit string) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f %s/s", r, unit)
	case r >= 10:
		return fmt.Sprintf("%.1f %s/s", r, unit)
	}
	return fmt.Sprintf("%.2f %s/s", r, unit)
}

// perUnit formats CPU time per unit of work ("—" when not measured).
func perUnit(d time.Duration, n int) string {
	if d <= 0 || n <= 0 {
		return "—"
	}
	us := float64(d) / float64(n) / float64(time.Microsecond)
	if us >= 1000 {
		return fmt.Sprintf("%.2f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// mib formats bytes as MiB ("—" when unknown).
func mib(b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
