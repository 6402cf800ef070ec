package postfixtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// queueDirs is the queue's layout as the Postfix package lays it out
// (its postfix-files): the directories under queue_directory, whether the
// postfix user owns them (else root), whether the postdrop group does,
// and their modes.
var queueDirs = []struct {
	name    string
	postfix bool
	postdrp bool
	mode    os.FileMode
}{
	{"active", true, false, 0o700}, {"bounce", true, false, 0o700},
	{"corrupt", true, false, 0o700}, {"defer", true, false, 0o700},
	{"deferred", true, false, 0o700}, {"flush", true, false, 0o700},
	{"hold", true, false, 0o700}, {"incoming", true, false, 0o700},
	{"private", true, false, 0o700}, {"saved", true, false, 0o700},
	{"trace", true, false, 0o700},
	{"maildrop", true, true, 0o730}, {"public", true, true, 0o710},
	{"pid", false, false, 0o755},
}

// prepare makes the instance's folders with the owners and modes Postfix
// checks for ("postfix check" makes the same, in seconds of shell). The
// postfix user must be able to reach the queue: the temporary folder and
// its parent are opened to it, and an ancestor closed to it is an error.
func (p *Postfix) prepare() error {
	for _, d := range []string{filepath.Dir(p.dir), p.dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("postfixtest: %w", err)
		}
	}
	for d := filepath.Dir(filepath.Dir(p.dir)); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("postfixtest: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("postfixtest: the postfix user cannot reach its queue through %s: set TMPDIR to a folder every user can enter", d)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	uid, gid, err := ids("postfix")
	if err != nil {
		return err
	}
	pg, err := user.LookupGroup("postdrop")
	if err != nil {
		return fmt.Errorf("postfixtest: %w", err)
	}
	postdrop, err := strconv.Atoi(pg.Gid)
	if err != nil {
		return fmt.Errorf("postfixtest: postdrop gid %q: %w", pg.Gid, err)
	}
	mk := func(path string, mode os.FileMode, uid, gid int) error {
		if err := os.Mkdir(path, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("postfixtest: %w", err)
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("postfixtest: %w", err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			return fmt.Errorf("postfixtest: %w", err)
		}
		return nil
	}
	queue := filepath.Join(p.dir, "queue")
	if err := mk(filepath.Join(p.dir, "conf"), 0o755, 0, 0); err != nil {
		return err
	}
	if err := mk(filepath.Join(p.dir, "data"), 0o700, uid, gid); err != nil {
		return err
	}
	if err := mk(filepath.Join(p.dir, "mail"), 0o777|os.ModeSticky, 0, 0); err != nil {
		return err
	}
	if err := mk(queue, 0o755, 0, 0); err != nil {
		return err
	}
	for _, d := range queueDirs {
		u, g := 0, 0
		if d.postfix {
			u, g = uid, gid
		}
		if d.postdrp {
			g = postdrop
		}
		if err := mk(filepath.Join(queue, d.name), d.mode, u, g); err != nil {
			return err
		}
	}
	return nil
}

// ids returns a user's uid and primary gid.
func ids(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("postfixtest: %w", err)
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, fmt.Errorf("postfixtest: uid %q: %w", u.Uid, err)
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return 0, 0, fmt.Errorf("postfixtest: gid %q: %w", u.Gid, err)
	}
	return uid, gid, nil
}
