package main

import (
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestExitCodes: one rule for every command. A usage error (bad flag, bad
// flag value, missing or extra argument, a malformed value typed on the
// command line) exits 2, a runtime failure 1, --help 0; `inbound` exits 75
// only when the message should be tried again later.
func TestExitCodes(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	if code, _, errs := cli("migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errs)
	}
	const email, feed = "ann@example.com", "https://example.com/feed"
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"help", []string{"help"}, 0},
		{"subscribe --help", []string{"subscribe", "--help"}, 0},
		{"inbound --help", []string{"inbound", "--help"}, 0},
		{"digest set --help", []string{"digest", "set", "--help"}, 0},
		{"subscribe bad flag", []string{"subscribe", "--bogus"}, 2},
		{"subscribe extra argument", []string{"subscribe", "--email", email, "--feed", feed, "extra"}, 2},
		{"subscribe no --feed", []string{"subscribe", "--email", email}, 2},
		{"subscribe --format fancy", []string{"subscribe", "--email", email, "--feed", feed, "--format", "fancy"}, 2},
		{"subscribe bad --include regexp", []string{"subscribe", "--email", email, "--feed", feed, "--include", "/[/"}, 2},
		{"subscribe bad --exclude regexp", []string{"subscribe", "--email", email, "--feed", feed, "--exclude", "/(/"}, 2},
		{"subscription set --format fancy", []string{"subscription", "set", "--email", email, "--feed", feed, "--format", "fancy"}, 2},
		{"subscription set bad --include", []string{"subscription", "set", "--email", email, "--feed", feed, "--include", "/[/"}, 2},
		{"subscription no verb", []string{"subscription"}, 2},
		{"pause --until tomorrow", []string{"pause", "--email", email, "--until", "tomorrow"}, 2},
		{"pause --until in the past", []string{"pause", "--email", email, "--until", "2020-01-01"}, 2},
		{"pause --feed not a URL", []string{"pause", "--email", email, "--feed", "ftp://example.com/x"}, 2},
		{"digest unknown verb", []string{"digest", "frob"}, 2},
		{"digest set bad schedule", []string{"digest", "set", "--email", email, "--name", "Daily", "--schedule", "every monday"}, 2},
		{"digest set bad zone", []string{"digest", "set", "--email", email, "--name", "Daily", "--schedule", "daily", "--tz", "Mars/Olympus"}, 2},
		{"credits grant --credits 0", []string{"credits", "grant", "--email", email, "--credits", "0", "--reason", "x"}, 2},
		{"credits grant --credits x", []string{"credits", "grant", "--email", email, "--credits", "x", "--reason", "x"}, 2},
		{"credits ledger --help", []string{"credits", "ledger", "--help"}, 0},
		{"credits ledger --csv --limit", []string{"credits", "ledger", "--email", email, "--csv", "--limit", "3"}, 2},
		{"poll no argument", []string{"poll"}, 2},
		{"poll not a URL", []string{"poll", "ftp://example.com/feed"}, 2},
		{"feed host bad --min-interval", []string{"feed", "host", "example.com", "--min-interval", "soon"}, 2},
		{"account bad --email", []string{"account", "status", "--email", "nobody"}, 2},
		{"inbound bad flag", []string{"inbound", "--bogus"}, 2},
		{"inbound extra argument", []string{"inbound", "extra"}, 2},
		// runtime failures
		{"account status of nobody", []string{"account", "status", "--email", "nobody@example.com"}, 1},
		{"pause nobody", []string{"pause", "--email", "nobody@example.com", "--until", "2w"}, 1},
		{"inbound without FEEDMAIL_BOUNCE_ADDRESS", []string{"inbound"}, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, out, errs := cli(tt.args...); code != tt.want {
				t.Errorf("feedmail %q: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.want, out, errs)
			}
		})
	}
}
