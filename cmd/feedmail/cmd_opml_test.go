package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

func TestImportExportOPML(t *testing.T) {
	dir := t.TempDir()
	fm := farm.New(clock.Real{})
	defer fm.Close()
	good := fm.AddFeed(farm.Spec{Title: "Good", ItemCount: 2})
	bad := fm.AddFeed(farm.Spec{Status: http.StatusGone})
	var doc bytes.Buffer
	if err := opml.Write(&doc, "x", []opml.Outline{{Title: "Good", XMLURL: good.URL()}, {Title: "Bad", XMLURL: bad.URL()}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "subs.opml")
	if err := os.WriteFile(file, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"FEEDMAIL_DATABASE_URL":           "sqlite://" + filepath.Join(dir, "fm.db"),
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_SECRET":                 "0123456789abcdef0123",
	}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, environOf(env), &out, &errb)
		return code, out.String(), errb.String()
	}

	// The file may come before or after the flags.
	code, out, errs := cli("import-opml", file, "--email", "ann@example.com", "--confirmed")
	if code != exPartial || !strings.Contains(errs, "1 of 2 feeds failed") {
		t.Fatalf("import with a feed that failed: exit %d %q, want %d saying 1 of 2 failed", code, errs, exPartial)
	}
	var rep importJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Added) != 1 || rep.Added[0].URL != good.URL() || len(rep.Failed) != 1 || !strings.Contains(rep.Failed[0].Reason, "410") {
		t.Fatalf("report: %+v", rep)
	}
	// The operator's --confirmed import is the proof of consent the export shows.
	code, out, errs = cli("account", "export", "--email", "ann@example.com")
	if ex := decodeJSON[model.AccountExport](t, out); code != 0 || len(ex.Subscriptions) != 1 ||
		ex.Subscriptions[0].ConfirmedBy != store.ConfirmedByOperator {
		t.Fatalf("export after import --confirmed: %d %s %+v, want confirmed by the operator", code, errs, ex.Subscriptions)
	}
	code, out, _ = cli("import-opml", "--email", "ann@example.com", file)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exPartial || len(rep.Already) != 1 || len(rep.Added) != 0 {
		t.Fatalf("second import: %d %+v", code, rep)
	}
	// Nothing failed: exit 0.
	goodOnly := filepath.Join(dir, "good.opml")
	doc.Reset()
	if err := opml.Write(&doc, "x", []opml.Outline{{Title: "Good", XMLURL: good.URL()}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goodOnly, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli("import-opml", "--email", "ann@example.com", goodOnly); code != 0 {
		t.Fatalf("import with nothing failed: exit %d %s", code, errs)
	}
	if code, out, _ := cli("help"); code != 0 || !strings.Contains(out, "3 done in part (import-opml, import-readers: some entries failed") {
		t.Errorf("help does not give import-opml's exit status 3:\n%s", out)
	}

	code, out, errs = cli("export-opml", "--email", "ann@example.com")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	outs, err := opml.Parse(strings.NewReader(out))
	if err != nil || len(outs) != 1 || outs[0].XMLURL != good.URL() || outs[0].Title != "Good" {
		t.Fatalf("export: %+v %v", outs, err)
	}

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"import-opml", "--email", "ann@example.com"}, 2, "exactly one OPML file"},
		{[]string{"import-opml", file}, 2, "--email is required"},
		{[]string{"import-opml", "--email", "ann@example.com", filepath.Join(dir, "missing.opml")}, 1, "open OPML file"},
		{[]string{"import-opml", "--email", "ann@example.com", "--digest", "Nope", file}, 1, "has no digest"},
		{[]string{"export-opml", "--email", "nobody@example.com"}, 1, "no account"},
	} {
		code, _, errs := cli(c.args...)
		if code != c.code || !strings.Contains(errs, c.says) {
			t.Errorf("%v: %d %q, want %d saying %q", c.args, code, errs, c.code, c.says)
		}
	}
}

// TestImportProgress: the progress line counts every outcome but is
// redrawn at most every progressEvery however fast feeds are done, and
// always for the last one.
func TestImportProgress(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	var lines []string
	p := &importProgress{show: func(s string) { lines = append(lines, s) }, clk: clk, start: clk.Now()}
	outcomes := []string{subscribe.ImportAdded, subscribe.ImportAdded, subscribe.ImportAlready, subscribe.ImportFailed}
	const total = 1000
	for i := range total {
		if i%100 == 0 {
			clk.Advance(progressEvery) // 10 redraws due over the run, plus the last
		}
		p.update(i+1, total, subscribe.ImportResult{Outcome: outcomes[i%4]})
	}
	if len(lines) != 11 {
		t.Errorf("%d redraws, want 11: %q", len(lines), lines)
	}
	if want := "import-opml: 1000/1000 feeds (100%): 500 added, 250 already, 250 failed, 500 feeds/s"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
}
