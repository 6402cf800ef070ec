package main

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestHelpEveryCommand: `feedmail help CMD`, `feedmail CMD --help` and, for
// commands with subcommands, `feedmail CMD SUB --help` print the usage
// line, a one-sentence description and the flags on stdout, and exit 0.
func TestHelpEveryCommand(t *testing.T) {
	cli := cliFor(storetest.FreshDSN(t, storetest.URL()), nil)
	type page struct{ name, usage, summary string }
	var pages []page
	for name, c := range commands() {
		if _, group := groups()[name]; group {
			continue // TestHelpGroups
		}
		pages = append(pages, page{name, c.usage, c.summary})
	}
	for group, subs := range groups() {
		for _, s := range subs {
			pages = append(pages, page{group + " " + s.name, s.usage, s.summary})
		}
	}
	for _, p := range pages {
		words := strings.Fields(p.name)
		for _, args := range [][]string{
			append([]string{"help"}, words...),
			append(append([]string(nil), words...), "--help"),
			append(append([]string(nil), words...), "-h"),
		} {
			code, out, errs := cli(args...)
			want := "usage: feedmail " + strings.TrimSpace(p.name+" "+p.usage) + "\n\n" + sentence(p.summary) + "\n"
			if code != 0 || errs != "" || !strings.HasPrefix(out, want) || strings.Contains(out, "Commands:") {
				t.Errorf("feedmail %q: exit %d, stderr %q, stdout:\n%s\nwant exit 0, nothing on stderr, stdout starting:\n%s",
					args, code, errs, out, want)
			}
		}
	}
	flagsOf := map[string][]string{
		"subscribe":  {"-email", "-feed", "-format", "-include", "-digest"},
		"digest set": {"-schedule", "-tz", "-name"},
		"inbound":    {"-recipient"},
		"pause":      {"-until"},
	}
	for name, want := range flagsOf {
		_, out, _ := cli(append(strings.Fields(name), "--help")...)
		for _, f := range append(want, "Flags:") {
			if !strings.Contains(out, f) {
				t.Errorf("feedmail %s --help does not show %s:\n%s", name, f, out)
			}
		}
	}
}

// TestHelpGroups: a command with subcommands (or the first word of
// two-word commands) asked for help lists each with its usage and exits 0.
func TestHelpGroups(t *testing.T) {
	cli := cliFor(storetest.FreshDSN(t, storetest.URL()), nil)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"digest", "--help"}, []string{"usage: feedmail digest set|list|delete", "feedmail digest set --email E", "feedmail digest delete"}},
		{[]string{"help", "digest"}, []string{"usage: feedmail digest set|list|delete"}},
		{[]string{"account", "--help"}, []string{"feedmail account status", "feedmail account export", "feedmail account delete"}},
		{[]string{"credits", "-h"}, []string{"feedmail credits balance", "feedmail credits grant", "feedmail credits ledger"}},
		{[]string{"subscription", "--help"}, []string{"feedmail subscription set --email E --feed URL"}},
		{[]string{"feed", "--help"}, []string{"feedmail feed status URL", "feedmail feed host HOST"}},
		{[]string{"help", "mail"}, []string{"feedmail mail health"}},
	}
	for _, tt := range tests {
		code, out, errs := cli(tt.args...)
		if code != 0 || errs != "" {
			t.Errorf("feedmail %q: exit %d, stderr %q; want 0 and nothing", tt.args, code, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("feedmail %q does not say %q:\n%s", tt.args, w, out)
			}
		}
	}
	if code, _, errs := cli("help", "frob"); code != 2 || !strings.Contains(errs, `unknown command "frob"`) {
		t.Errorf("feedmail help frob: exit %d, stderr %q; want 2 and unknown command", code, errs)
	}
}

// TestDigestScheduleErrors: a schedule the command cannot read is a usage
// error that says what the web form says (digest.ScheduleProblem): the
// forms accepted, or what is wrong with the time typed.
func TestDigestScheduleErrors(t *testing.T) {
	cli := cliFor(storetest.FreshDSN(t, storetest.URL()), nil)
	tests := []struct{ spec, want string }{
		{"every monday", "use words like “daily at 8:00” or “weekly on Friday at 17:30”, 5 cron fields like “0 7 * * 1-5”, @daily, @weekly or @every 2h"},
		{"0 7 * *", "use words like “daily at 8:00”"},
		{"daily at 25:00", "25:00 is not a time of day (00:00 to 23:59)"},
		{"weekly on funday at 8:00", `"funday" is not a day of the week`},
		{"@every 1s", "that is too often"},
	}
	for _, tt := range tests {
		code, _, errs := cli("digest", "set", "--email", "ann@example.com", "--name", "Daily", "--schedule", tt.spec)
		if code != 2 || !strings.Contains(errs, tt.want) || strings.Contains(errs, "expected") {
			t.Errorf("--schedule %q: exit %d, stderr %q; want 2 and %q", tt.spec, code, errs, tt.want)
		}
	}
}
