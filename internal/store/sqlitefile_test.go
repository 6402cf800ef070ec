package store_test

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

// TestSQLiteFileIsPrivate: a new SQLite file and its -wal and -shm are
// readable by their owner only, whatever the umask, and an existing file
// others can read draws a warning.
func TestSQLiteFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask, under which files were 0644
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "feedmail.db")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+path, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettingOrInit(ctx, "probe", "x"); err != nil { // a write, so -wal and -shm exist
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(p), got)
		}
	}
	s.Close()
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a private file drew a warning:\n%s", logs.String())
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, "sqlite://"+path, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), fs.FileMode(0o644).String()) {
		t.Errorf("a file others can read drew no warning naming its mode; logs:\n%s", logs.String())
	}
}
