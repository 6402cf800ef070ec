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

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
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
	if code != 0 {
		t.Fatalf("import: %d %s", code, errs)
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
	if ex := decodeJSON[store.AccountExport](t, out); code != 0 || len(ex.Subscriptions) != 1 ||
		ex.Subscriptions[0].ConfirmedBy != store.ConfirmedByOperator {
		t.Fatalf("export after import --confirmed: %d %s %+v, want confirmed by the operator", code, errs, ex.Subscriptions)
	}
	code, out, _ = cli("import-opml", "--email", "ann@example.com", file)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Already) != 1 || len(rep.Added) != 0 {
		t.Fatalf("second import: %d %+v", code, rep)
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
