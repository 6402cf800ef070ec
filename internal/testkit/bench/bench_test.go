package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/bench"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// benchURL is the database kind of this run, as the bench takes it: a
// Postgres server URL, or any sqlite:// URL (the bench makes its own file).
func benchURL() string {
	u := storetest.URL()
	if strings.HasPrefix(u, "postgres") {
		return u
	}
	return "sqlite://./feedmail.db"
}

// TestEveryScenarioTiny runs every scenario small on the run's database and
// checks the report: a row per scenario, in order, with sane numbers, and a
// table that shows them all.
func TestEveryScenarioTiny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress []string
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL: benchURL(), Feeds: 50, Items: 5, Subscribers: 40, Digests: 30, Hosts: 3,
		Progress: func(s string) { progress = append(progress, s) },
	})
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	if len(rep.Rows) != len(bench.All()) {
		t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), len(bench.All()), rep.Rows)
	}
	want := map[string]int{
		bench.Cold: 50, bench.Warm: 50, bench.Changed: 50, bench.FanOut: 40,
		bench.Outbox: 40 + 5, // the fan-out's emails and the changed pass's
		bench.Digest: 30,
	}
	for i, row := range rep.Rows {
		if row.Scenario != bench.All()[i] {
			t.Errorf("row %d is %q, want %q", i, row.Scenario, bench.All()[i])
		}
		if row.Count != want[row.Scenario] {
			t.Errorf("%s: count %d, want %d", row.Scenario, row.Count, want[row.Scenario])
		}
		if row.Elapsed <= 0 || row.Rate <= 0 || row.Trips <= 0 || row.TripsPer <= 0 || row.PeakRSS <= 0 {
			t.Errorf("%s: elapsed %v, rate %v, trips %d (%v per unit), peak RSS %d: want all > 0",
				row.Scenario, row.Elapsed, row.Rate, row.Trips, row.TripsPer, row.PeakRSS)
		}
		hasBase := row.Scenario != bench.FanOut && row.Scenario != bench.Digest
		if hasBase != (row.Baseline != nil) {
			t.Errorf("%s: baseline %+v, want one: %v", row.Scenario, row.Baseline, hasBase)
		}
		if row.Baseline != nil && (row.Baseline.Rate <= 0 || row.Ratio <= 0) {
			t.Errorf("%s: baseline %+v, ratio %v", row.Scenario, row.Baseline, row.Ratio)
		}
	}
	if rep.Machine.CPUs < 1 || rep.Machine.Database == "" || rep.Machine.GoVersion == "" {
		t.Errorf("machine %+v", rep.Machine)
	}

	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tab.String())
	for _, name := range bench.All() {
		if !regexp.MustCompile(`(?m)^\s*` + name + `\s+\d+ \w+\s+[\d.]+ m?s\s`).MatchString(tab.String()) {
			t.Errorf("the table has no row for %s", name)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Rows) {
		t.Errorf("JSON round trip: %v, %d rows", err, len(back.Rows))
	}
	// Progress was shown (the sizes are tiny, so maybe not every part)
	// and always cleared at the end.
	if len(progress) > 0 && progress[len(progress)-1] != "" {
		t.Errorf("progress not cleared: last %q", progress[len(progress)-1])
	}
}

// TestScenarioAlone runs scenarios that depend on others' data on their
// own: they prepare it themselves, untimed.
func TestScenarioAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{bench.Changed, bench.Outbox} {
		t.Run(name, func(t *testing.T) {
			rep, err := bench.Run(ctx, bench.Config{DatabaseURL: benchURL(), Feeds: 20, Items: 3, Subscribers: 10, Digests: 5,
				Hosts: 2, Scenarios: []string{name}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != 1 || rep.Rows[0].Scenario != name || rep.Rows[0].Count == 0 {
				t.Fatalf("rows %+v", rep.Rows)
			}
		})
	}
}

// TestImportScenario runs the import scenario small: a row for every feed
// of the list, all added, with the CPU time it took, and only when named.
func TestImportScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{DatabaseURL: benchURL(), Feeds: 40, Items: 3, Hosts: 3,
		Scenarios: []string{bench.Import}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	row := rep.Rows[0]
	if row.Scenario != bench.Import || row.Count != 40 || !strings.HasPrefix(row.Note, "40 added, 0 already, 0 failed;") || row.Baseline == nil ||
		row.Rate <= 0 || row.Trips <= 0 || row.PeakRSS <= 0 || row.CPU <= 0 {
		t.Errorf("row %+v", row)
	}
	if got, err := bench.ParseScenarios("all"); err != nil || slices.Contains(got, bench.Import) {
		t.Errorf("ParseScenarios(all) = %v, %v; want no import", got, err)
	}
	if got, err := bench.ParseScenarios("import"); err != nil || len(got) != 1 {
		t.Errorf("ParseScenarios(import) = %v, %v", got, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  bench.Config
	}{
		{"too few feeds", bench.Config{DatabaseURL: "sqlite://x.db", Feeds: 5}},
		{"negative items", bench.Config{DatabaseURL: "sqlite://x.db", Items: -1}},
		{"too many items", bench.Config{DatabaseURL: "sqlite://x.db", Items: 1001}},
		{"unknown scenario", bench.Config{DatabaseURL: "sqlite://x.db", Scenarios: []string{"tepid"}}},
		{"no database", bench.Config{}},
		{"other database", bench.Config{DatabaseURL: "mysql://localhost/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := bench.Run(context.Background(), c.cfg)
			if !errors.Is(err, bench.ErrBadConfig) {
				t.Errorf("err = %v, want ErrBadConfig", err)
			}
		})
	}
	if got, err := bench.ParseScenarios(" warm , cold,warm"); err != nil || strings.Join(got, ",") != "warm,cold" {
		t.Errorf("ParseScenarios = %v, %v", got, err)
	}
	if got, err := bench.ParseScenarios("all"); err != nil || len(got) != len(bench.All()) {
		t.Errorf("ParseScenarios(all) = %v, %v", got, err)
	}
	if _, err := bench.ParseScenarios(",,"); !errors.Is(err, bench.ErrBadConfig) {
		t.Errorf("ParseScenarios(,,) = %v", err)
	}
}

// TestImportReadersScenario runs the import-readers scenario small: every
// reader imported with both subscriptions, the bad entry reported, a bare
// loop to compare with, and only when named.
func TestImportReadersScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{DatabaseURL: benchURL(), Feeds: 1500, Readers: 1200, Hosts: 1,
		Scenarios: []string{bench.ImportReaders}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	row := rep.Rows[0]
	if row.Scenario != bench.ImportReaders || row.Count != 2400 || !strings.HasPrefix(row.Note, "1200 readers") ||
		!strings.Contains(row.Note, "2400 subscriptions, 1 problems") || row.Baseline == nil || row.Rate <= 0 || row.PeakRSS <= 0 {
		t.Errorf("row %+v", row)
	}
	if got, err := bench.ParseScenarios("all"); err != nil || slices.Contains(got, bench.ImportReaders) {
		t.Errorf("ParseScenarios(all) = %v, %v; want no import-readers", got, err)
	}
}

// TestImportReadersAPIScenario runs the import-readers-api scenario
// small: every reader imported over HTTP with both subscriptions, the bad
// entries reported in the answer, the bare loop beside it, and only when
// named.
func TestImportReadersAPIScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{DatabaseURL: benchURL(), Feeds: 1500, Readers: 2100, Hosts: 1,
		Scenarios: []string{bench.ImportReadersAPI}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	row := rep.Rows[0]
	if row.Scenario != bench.ImportReadersAPI || row.Count != 4200 || !strings.HasPrefix(row.Note, "2100 readers") ||
		!strings.Contains(row.Note, "4200 subscriptions, 2 problems") || row.Baseline == nil || row.Rate <= 0 || row.PeakRSS <= 0 {
		t.Errorf("row %+v", row)
	}
	if got, err := bench.ParseScenarios("all"); err != nil || slices.Contains(got, bench.ImportReadersAPI) {
		t.Errorf("ParseScenarios(all) = %v, %v; want no import-readers-api", got, err)
	}
}

// TestOutboxSinkInOwnProcess runs the outbox scenario small and checks
// that its SMTP sink ran in a child process that took every email, with
// its CPU in the note and the child gone afterwards.
func TestOutboxSinkInOwnProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{DatabaseURL: benchURL(), Feeds: 20, Items: 3, Subscribers: 60, Digests: 5,
		Hosts: 2, DKIM: "ed25519", Scenarios: []string{bench.FanOut, bench.Outbox}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[1].Scenario != bench.Outbox {
		t.Fatalf("rows %+v", rep.Rows)
	}
	row := rep.Rows[1]
	s := row.Sink
	if s == nil || !s.Separate || s.PID == os.Getpid() || s.PID <= 0 || s.Received != row.Count || row.Count != 60 {
		t.Fatalf("sink %+v for %d emails (this process %d); want its own process that took all 60", s, row.Count, os.Getpid())
	}
	if !strings.Contains(row.Note, "SMTP sink in its own process:") || !strings.Contains(row.Note, "not counted above") {
		t.Errorf("note %q", row.Note)
	}
	t.Logf("outbox note: %s", row.Note)
	if p, err := os.FindProcess(s.PID); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("the sink (pid %d) is still there after the run", s.PID)
	}
}
