package outbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// A pass's journal closes the window between a receiver's acceptance and
// its record in the database against a process killed in between (kill -9,
// an OOM kill): each acceptance is written to a local file, one write(2)
// as the reply arrives, before it waits for the group commit. The kernel
// keeps what was written when the process dies, so the next mailer on the
// machine (the restarted process, or another sharing the folder) records
// the dead pass's acceptances under the dead owner's name while its lease
// still holds, and the rows are not sent again. A journal is not synced:
// it does not cover the machine itself going down.
//
// Each pass holds its file locked (flock) while it runs; a file whose lock
// can be taken belongs to a pass that ended without removing it (its
// process died, or its last commit failed) and is replayed, then removed.

// journalHead begins every journal; the owner's name follows it.
const journalHead = "feedmail-outbox-journal v1\t"

// journalExt names journals; a journal being created has another name
// until it is locked, so a replay never takes a live one.
const journalExt = ".jnl"

// passJournal is one pass's journal file, held locked while the pass runs.
type passJournal struct {
	f    *os.File
	path string
}

// beginJournal creates and locks a journal for the pass in JournalDir; nil
// when there is no folder or the file cannot be made (logged when that
// starts and when it ends, not each pass).
func (o *Outbox) beginJournal() *passJournal {
	dir := o.cfg.JournalDir
	if dir == "" {
		return nil
	}
	j, err := createJournal(dir, o.cfg.Owner)
	if err != nil {
		if !o.journalOff.Swap(true) {
			o.cfg.Log.Warn("outbox journal off: a process killed mid-pass may send its last acceptances again", "dir", dir, "err", err)
		}
		return nil
	}
	if o.journalOff.Swap(false) {
		o.cfg.Log.Info("outbox journal on again", "dir", dir)
	}
	return j
}

// createJournal makes the file under a temporary name, locks it, writes
// its head and only then gives it its journal name.
func createJournal(dir, owner string) (*passJournal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal folder: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	base := filepath.Join(dir, safeName(owner)+"-"+hex.EncodeToString(b))
	create := func() (*os.File, error) {
		return os.OpenFile(base+".new", os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	f, err := create()
	if errors.Is(err, fs.ErrNotExist) { // another process stopping removed the empty folder
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = create()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	fail := func(err error) (*passJournal, error) {
		_ = f.Close()
		_ = os.Remove(base + ".new")
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := lockFile(f); err != nil {
		return fail(err)
	}
	if _, err := f.WriteString(journalHead + owner + "\n"); err != nil {
		return fail(err)
	}
	if err := os.Rename(base+".new", base+journalExt); err != nil {
		return fail(err)
	}
	return &passJournal{f: f, path: base + journalExt}, nil
}

// add writes one acceptance in a single write; an error is returned for
// the caller to log (the mark still goes to the database).
func (j *passJournal) add(m store.SentMark) error {
	nb := "0"
	if m.NoBounces {
		nb = "1"
	}
	line := strconv.FormatInt(m.ID, 10) + "\t" + strconv.FormatInt(m.UserID, 10) + "\t" + m.Channel + "\t" + nb + "\t" +
		strings.Map(noControl, m.MessageID) + "\n"
	_, err := j.f.WriteString(line)
	return err
}

// end removes the journal of a pass whose acceptances are all recorded,
// or, when keep, leaves it unlocked for a replay to record them.
func (j *passJournal) end(keep bool) {
	if !keep {
		_ = os.Remove(j.path)
	}
	_ = j.f.Close()
}

// ReplayJournals records the acceptances of the journals in JournalDir
// that no running pass holds (their process died, or their last commit
// failed) and removes each journal once recorded. It returns how many
// rows it recorded as sent; a journal it could not record stays for the
// next replay.
func (o *Outbox) ReplayJournals(ctx context.Context) (int64, error) {
	dir := o.cfg.JournalDir
	if dir == "" {
		return 0, nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	if err != nil {
		return 0, fmt.Errorf("outbox journal: %w", err)
	}
	var total int64
	var errs []error
	for _, name := range names {
		n, err := o.replayOne(ctx, name)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// removeJournalDir removes the journal folder if it is empty, so that a
// stopped mailer leaves nothing behind (each install has its own folder);
// one with a journal in it stays for the next mailer's replay.
func (o *Outbox) removeJournalDir() {
	if o.cfg.JournalDir != "" {
		_ = os.Remove(o.cfg.JournalDir) // fails, harmlessly, when not empty
	}
}

// replayInterval is how often Run looks for journals of dead passes.
const replayInterval = 10 * time.Second

// replayLoop records the journals of dead passes at once and then every
// replayInterval, until ctx ends.
func (o *Outbox) replayLoop(ctx context.Context) {
	for {
		if _, err := o.ReplayJournals(ctx); err != nil && ctx.Err() == nil {
			o.cfg.Log.Warn("outbox journal replay", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(replayInterval):
		}
	}
}

// replayOne records the journal at path unless a live pass holds it.
func (o *Outbox) replayOne(ctx context.Context, path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // its pass ended meanwhile
	}
	if err != nil {
		return 0, fmt.Errorf("outbox journal %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return 0, nil // a running pass holds it
	}
	owner, marks, err := readJournal(f)
	if err != nil {
		return 0, fmt.Errorf("outbox journal %s: %w", filepath.Base(path), err)
	}
	n, err := o.cfg.Store.MarkOutboxSent(ctx, owner, marks)
	if err != nil {
		return 0, fmt.Errorf("outbox journal %s: %w", filepath.Base(path), err)
	}
	if len(marks) > 0 {
		o.cfg.Log.Warn("recorded the acceptances of a pass that ended without recording them (its process died?)",
			"journal", filepath.Base(path), "owner", owner, "accepted", len(marks), "recorded", n)
	}
	_ = os.Remove(path)
	return n, nil
}

// readJournal parses a journal: its owner and the complete lines' marks
// (a last line cut short by the process's death is skipped).
func readJournal(f *os.File) (string, []store.SentMark, error) {
	r := bufio.NewReader(f)
	head, err := r.ReadString('\n')
	owner, ok := strings.CutPrefix(strings.TrimSuffix(head, "\n"), journalHead)
	if err != nil || !ok || owner == "" {
		return "", nil, errors.New("not a journal (bad head)")
	}
	var marks []store.SentMark
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return owner, marks, nil // EOF: a partial last line is no acceptance
		}
		if m, ok := parseMark(strings.TrimSuffix(line, "\n")); ok {
			marks = append(marks, m)
		}
	}
}

// parseMark reads one journal line; false for a malformed one.
func parseMark(line string) (store.SentMark, bool) {
	f := strings.Split(line, "\t")
	if len(f) != 5 {
		return store.SentMark{}, false
	}
	id, err1 := strconv.ParseInt(f[0], 10, 64)
	user, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return store.SentMark{}, false
	}
	return store.SentMark{ID: id, UserID: user, Channel: f[2], NoBounces: f[3] == "1", MessageID: f[4]}, true
}

// safeName keeps the letters, digits, '-' and '.' of an owner's name for
// a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// noControl drops tabs, line breaks and other control characters.
func noControl(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return -1
	}
	return r
}
