package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// sqliteFileMode is the mode a new SQLite file is created with. The file
// holds the link-signing secret, webhook secrets and chat tokens, so only
// feedmail's own user may read it. SQLite gives its -wal and -shm files the
// main file's mode.
const sqliteFileMode fs.FileMode = 0o600

// prepareSQLiteFile creates the SQLite file at path with sqliteFileMode when
// it does not exist yet (an empty file is an empty database), so the driver
// never creates it with the process's umask (0644 under the usual 022). An
// existing file is left as it is, but a file (or -wal, -shm) that others than
// its owner may read is logged as a warning: anyone on the machine could
// read the secret and forge account links.
func prepareSQLiteFile(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, sqliteFileMode)
	switch {
	case err == nil:
		return f.Close()
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create SQLite file %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm()&0o077 == 0 {
			continue
		}
		log.Warn("the database file can be read by other users of this machine; it holds the link-signing secret: chmod 600 it",
			"file", p, "mode", st.Mode().Perm().String())
	}
	return nil
}
