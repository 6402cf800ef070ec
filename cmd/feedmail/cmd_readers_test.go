package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// writeLists writes one OPML file per person into a new folder of dir.
func writeLists(t *testing.T, dir, name string, lists map[string][]string) string {
	t.Helper()
	folder := filepath.Join(dir, name)
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for email, urls := range lists {
		var doc bytes.Buffer
		var outs []opml.Outline
		for _, u := range urls {
			outs = append(outs, opml.Outline{Title: "T " + u, XMLURL: u})
		}
		if len(outs) == 0 {
			doc.WriteString("<opml><body>broken")
		} else if err := opml.Write(&doc, email, outs); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, email+".opml"), doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return folder
}

// TestImportReadersCommand: a folder with good and bad lists, imported
// with --confirmed, stores what is good, emails nobody, reports each
// problem (in the report and as JSON lines in --problems) and exits 3;
// the same people again without --confirmed add nothing; a folder with
// nothing wrong exits 0 and, unconfirmed, queues one email per person.
func TestImportReadersCommand(t *testing.T) {
	dir := t.TempDir()
	dsn := storetest.FreshDSN(t, storetest.URL())
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123"}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, environOf(env), &out, &errb)
		return code, out.String(), errb.String()
	}
	mixed := writeLists(t, dir, "mixed", map[string][]string{
		"ann@mail.org":    {"https://feeds.org/a", "https://feeds.org/b", "ftp://feeds.org/c"},
		"bob@mail.org":    {"https://feeds.org/a", "https://feeds.org/a#x"},
		"Ann+2@MAIL.org":  {"https://feeds.org/a", "https://feeds.org/b", "ftp://feeds.org/c"}, // either may come first
		"eve@example.net": {"https://feeds.org/a"},
		"zed@[10.0.0.1]":  {"https://feeds.org/a"},
		"broken@mail.org": nil,
	})
	problems := filepath.Join(dir, "problems.jsonl")
	code, out, errs := cli("import-readers", "--confirmed", "--problems", problems, mixed)
	if code != exPartial || !strings.Contains(errs, "6 problems") {
		t.Fatalf("mixed import: exit %d %q, want %d saying 6 problems\n%s", code, errs, exPartial, out)
	}
	rep := decodeJSON[readersJSON](t, out)
	if rep.Lists != 6 || rep.Readers != 2 || rep.Created != 2 || rep.Added != 3 || rep.SkippedLists != 4 || rep.Failed != 1 ||
		rep.Already != 1 || len(rep.Shown) != 6 || rep.ByKind[subscribe.ProblemDeadAddress] != 1 {
		t.Fatalf("report %+v", rep)
	}
	kinds := problemKinds(t, problems)
	want := []string{subscribe.ProblemBadAddress, subscribe.ProblemBadList, subscribe.ProblemBadURL,
		subscribe.ProblemDeadAddress, subscribe.ProblemDuplicateReader, subscribe.ProblemDuplicateSub}
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Errorf("problems file kinds %q, want %q", kinds, want)
	}
	st, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkCounts(t, st, "after --confirmed", map[string]int64{
		"SELECT COUNT(*) FROM users":                                2,
		"SELECT COUNT(*) FROM subscriptions WHERE state = 'active'": 3,
		"SELECT COUNT(*) FROM feeds":                                2,
		"SELECT COUNT(*) FROM outbox":                               0,
		"SELECT COUNT(*) FROM users WHERE confirmed_at IS NOT NULL": 2,
		"SELECT SUM(subscriber_count) FROM feeds":                   3,
		"SELECT COUNT(*) FROM ledger_entries WHERE kind = 'grant'":  2,
	})
	// The same good people again, unconfirmed: all already there, nobody emailed.
	again := writeLists(t, dir, "again", map[string][]string{"bob@mail.org": {"https://feeds.org/a"}})
	if code, out, errs := cli("import-readers", again); code != exPartial || decodeJSON[readersJSON](t, out).Already != 1 {
		t.Fatalf("again: exit %d %s %s, want %d and 1 already there", code, out, errs, exPartial)
	}
	fresh := map[string][]string{}
	for i := range 5 {
		fresh[fmt.Sprintf("new%d@mail.org", i)] = []string{"https://feeds.org/a", fmt.Sprintf("https://feeds.org/n%d", i)}
	}
	code, out, errs = cli("import-readers", "--batch", "2", writeLists(t, dir, "fresh", fresh))
	if r := decodeJSON[readersJSON](t, out); code != 0 || r.Added != 10 || r.Notices != 5 || r.Problems != 0 {
		t.Fatalf("clean unconfirmed import: exit %d %s %+v", code, errs, r)
	}
	checkCounts(t, st, "after the unconfirmed import", map[string]int64{
		"SELECT COUNT(*) FROM subscriptions WHERE state = 'pending'": 10,
		"SELECT COUNT(*) FROM outbox WHERE kind = 'notice'":          5,
	})
}

// problemKinds returns the kinds of the JSON lines of a problems file,
// sorted.
func problemKinds(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p subscribe.ReaderProblem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil || p.Email == "" || p.Reason == "" {
			t.Fatalf("problem line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, p.Kind)
	}
	slices.Sort(kinds)
	return kinds
}

// checkCounts runs each counting query and compares.
func checkCounts(t *testing.T, st *store.Store, when string, want map[string]int64) {
	t.Helper()
	for q, n := range want {
		var got int64
		if err := st.DB.Raw(q).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("%s: %s = %d, want %d", when, q, got, n)
		}
	}
}

// TestImportReadersUsage: no folder is a usage error (2); a folder that
// does not exist fails (1) after printing the empty report.
func TestImportReadersUsage(t *testing.T) {
	dir := t.TempDir()
	env := environOf(map[string]string{"FEEDMAIL_DATABASE_URL": "sqlite://" + filepath.Join(dir, "fm.db"),
		"FEEDMAIL_SECRET": "0123456789abcdef0123"})
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"import-readers", "--confirmed"}, 2},
		{[]string{"import-readers", "--batch", "0", dir}, 2},
		{[]string{"import-readers", filepath.Join(dir, "missing")}, 1},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, env, &out, &errb); code != c.code {
			t.Errorf("%q: exit %d (%s), want %d", c.args, code, errb.String(), c.code)
		}
	}
}
