package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandErrorsAreOneLine: a usage error is its one line and the usage
// line, never the flag list or a sentinel default; a command group named
// alone lists its verbs; an unknown zone is said once.
func TestCommandErrorsAreOneLine(t *testing.T) {
	cli := cliFor("sqlite://"+filepath.Join(t.TempDir(), "feedmail.db"), nil)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"feed"}, 2, "feedmail feed: which one? host, move, owner, recover or status"},
		{[]string{"feed", "host", "example.com", "--min-interval", "abc"}, 2, `--min-interval "abc" is not a duration like 10m or 2h`},
		{[]string{"subscribe", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"digest", "set", "--email", "a@example.com", "--name", "x", "--schedule", "daily", "--tz", "Mars/Base"}, 2,
			`--tz: unknown time zone: "Mars/Base"`},
	}
	for _, c := range cases {
		code, out, errs := cli(c.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != c.code || out != "" || !strings.Contains(errs, c.want) || len(lines) > 2 ||
			strings.Contains(errs, "default") || strings.Count(errs, "unknown time zone") > 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant exit %d, at most two lines, saying %q", c.args, code, out, errs, c.code, c.want)
		}
	}
	// -h still lists the flags, on stdout (TestHelpEveryCommand).
	if code, out, _ := cli("feed", "host", "-h"); code != 0 || !strings.Contains(out, "-min-interval") {
		t.Errorf("feed host -h: exit %d, %q", code, out)
	}
}
