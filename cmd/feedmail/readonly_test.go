package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommandsMakeNoDatabase: commands that only look things up,
// run where there is no database, say so and leave no file behind.
func TestReadOnlyCommandsMakeNoDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feedmail.db")
	cli := cliFor("sqlite://"+path, nil)
	for _, args := range [][]string{
		{"feed", "status", "https://blog.example.org/feed"},
		{"credits", "balance", "--email", "a@example.com"},
		{"credits", "ledger", "--email", "a@example.com"},
		{"digest", "list", "--email", "a@example.com"},
		{"export-opml", "--email", "a@example.com"},
		{"account", "export", "--email", "a@example.com"},
		{"account", "delete", "--email", "a@example.com"},
	} {
		code, out, errs := cli(args...)
		if code != 1 || out != "" || !strings.Contains(errs, "no database at "+path) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 saying there is no database", args, code, out, errs)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%v created %s", args, path)
		}
	}
}
