package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJournalDir: the outbox journals go to systemd's state directory when
// the unit has one (its /tmp dies with the unit), else to the temporary
// directory, in a folder of the install's own.
func TestJournalDir(t *testing.T) {
	for _, c := range []struct{ state, want string }{
		{"", filepath.Join(os.TempDir(), "feedmail-outbox-abc")},
		{"/var/lib/feedmail", "/var/lib/feedmail/feedmail-outbox-abc"},
		{"/var/lib/feedmail:/var/lib/other", "/var/lib/feedmail/feedmail-outbox-abc"},
	} {
		t.Setenv("STATE_DIRECTORY", c.state)
		if got := journalDir("abc"); got != c.want {
			t.Errorf("STATE_DIRECTORY=%q: %q, want %q", c.state, got, c.want)
		}
	}
}
