package main

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/ledgercsv"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestCreditsLedgerCSV: `feedmail credits ledger --csv` prints the whole
// ledger, oldest first, as CSV with a header row, formula-safe; its help
// and usage errors behave as every command's.
func TestCreditsLedgerCSV(t *testing.T) {
	cli := cliFor(storetest.FreshDSN(t, storetest.URL()), nil)
	const email = "csv@example.com"
	for _, reason := range []string{"welcome, friend", "=HYPERLINK(\"https://evil.example\")", "line one\nline two"} {
		if code, _, errs := cli("credits", "grant", "--email", email, "--credits", "5", "--reason", reason); code != 0 {
			t.Fatalf("grant: exit %d: %s", code, errs)
		}
	}
	code, out, errs := cli("credits", "ledger", "--email", email, "--csv")
	if code != 0 {
		t.Fatalf("ledger --csv: exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rows) != 4 || strings.Join(rows[0], ",") != strings.Join(ledgercsv.Header, ",") {
		t.Fatalf("rows %q: want the header and 3 entries", rows)
	}
	wantReasons := []string{"welcome, friend", "'=HYPERLINK(\"https://evil.example\")", "line one\nline two"}
	for i, r := range rows[1:] {
		if _, err := time.Parse(time.RFC3339, r[0]); err != nil || !strings.HasSuffix(r[0], "Z") {
			t.Errorf("row %d time %q: not RFC 3339 UTC", i, r[0])
		}
		if r[1] != "grant" || r[2] != "+5" || r[3] != []string{"5", "10", "15"}[i] || r[4] != wantReasons[i] ||
			!strings.HasPrefix(r[5], "grant:admin:") {
			t.Errorf("row %d = %q", i, r)
		}
	}
	bad := []struct {
		name string
		args []string
		code int
	}{
		{"--csv with --limit", []string{"credits", "ledger", "--email", email, "--csv", "--limit", "5"}, 2},
		{"--csv=maybe", []string{"credits", "ledger", "--email", email, "--csv=maybe"}, 2},
		{"--csv without email", []string{"credits", "ledger", "--csv"}, 2},
		{"--csv of nobody", []string{"credits", "ledger", "--email", "nobody@example.com", "--csv"}, 1},
	}
	for _, c := range bad {
		if code, out, errs := cli(c.args...); code != c.code || out != "" || !strings.Contains(errs, "feedmail credits") {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", c.name, code, c.code, out, errs)
		}
	}
	code, out, _ = cli("credits", "ledger", "--help")
	if code != 0 || !strings.Contains(out, "usage: feedmail credits ledger --email E [--limit N] [--csv]") || !strings.Contains(out, "-csv") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
}
