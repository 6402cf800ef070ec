package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// benchCLI runs `feedbench …` in-process with the run's database.
func benchCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	dsn := storetest.URL()
	if !strings.HasPrefix(dsn, "postgres") {
		dsn = "sqlite://" + t.TempDir() + "/unused.db" // the bench makes its own file
	}
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_LOG_LEVEL": "warn"}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBenchCommandBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--feeds", "0"},
		{"--feeds", "5"},
		{"--items", "many"},
		{"--scenarios", "tepid"},
		{"--subscribers", "-3"},
		{"--dkim", "dsa"},
		{"extra"},
	} {
		code, out, errs := benchCLI(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "feedbench") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and a usage message", args, code, out, errs)
		}
	}
}

func TestBenchCommandJSON(t *testing.T) {
	code, out, errs := benchCLI(t, "--feeds", "10", "--items", "2", "--digests", "3", "--subscribers", "4",
		"--hosts", "1", "--scenarios", "digest,fanout", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errs)
	}
	var rep struct {
		Rows []struct {
			Scenario string  `json:"scenario"`
			Count    int     `json:"count"`
			Rate     float64 `json:"rate"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	// Scenarios run in their fixed order whatever the flag's order. (Both
	// parse at most one feed at a time: concurrent first parses trip the
	// race detector's false positive that internal/testkit/bench/main_test.go explains.)
	if len(rep.Rows) != 2 || rep.Rows[0].Scenario != "fanout" || rep.Rows[0].Count != 4 ||
		rep.Rows[1].Scenario != "digest" || rep.Rows[1].Count != 3 || rep.Rows[0].Rate <= 0 {
		t.Errorf("rows %+v", rep.Rows)
	}
}
