package faults

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/mailer"
)

// disk is an injected Maildir write function that stores the first
// `room` files and then fails with ENOSPC, until freed.
type disk struct {
	mu     sync.Mutex
	room   int // files that still fit; < 0: unlimited
	writes int
}

func (d *disk) write(path string, data []byte) error {
	d.mu.Lock()
	full := d.room == 0
	if d.room > 0 {
		d.room--
	}
	d.writes++
	d.mu.Unlock()
	if full {
		// What a write(2) on a full file system returns, after the file
		// was created: the transport must remove it.
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return err
		}
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	return mailer.WriteFileSync(path, data)
}

func (d *disk) free() {
	d.mu.Lock()
	d.room = -1
	d.mu.Unlock()
}

// TestMaildirFullDisk: the Maildir transport (the default without SMTP) on
// a disk that is full from the start, or fills after one message. Outcome:
// every email that did not fit is retried (temporary, 1 min backoff, last
// error "disk full"), no half-written file is left in tmp/ or new/, the
// charge is taken once; when space comes back the retry delivers each
// email exactly once.
func TestMaildirFullDisk(t *testing.T) {
	rows := []struct {
		name  string
		room  int
		sent  int
		retry int
	}{
		{name: "full from the start", room: 0, sent: 0, retry: 3},
		{name: "fills after one message", room: 1, sent: 1, retry: 2},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			readers := []string{"ann@example.net", "bob@example.net", "cid@example.net"}
			ff := e.fm.AddFeed(farm.Spec{Title: "Local feed", ItemCount: 2, ETag: farm.ETagStrong})
			f := e.follow(ff.URL(), 10, readers...)
			p := e.poller(nil)
			e.pass(p, 1)
			e.clk.Advance(10 * time.Minute)
			ff.Publish()
			e.pass(p, 1)
			queued := e.outbox()
			items := e.items(f.ID)

			dir := filepath.Join(t.TempDir(), "mail")
			d := &disk{room: row.room}
			md, err := mailer.NewMaildir(dir, mailer.WithWriteFile(d.write), mailer.WithClock(e.clk))
			if err != nil {
				t.Fatal(err)
			}
			ob := e.outboxWorker(md)
			e.send(ob)
			sent, retry := 0, 0
			for _, r := range e.outbox() {
				switch r.State {
				case store.OutboxSent:
					sent++
				case store.OutboxQueued:
					retry++
					if !strings.Contains(r.LastError, "disk full") || r.Attempts != 1 ||
						!r.NextAttemptAt.Equal(e.clk.Now().Add(outbox.RetryBase)) {
						t.Errorf("row %d: attempts %d next %v last error %q", r.ID, r.Attempts, r.NextAttemptAt, r.LastError)
					}
				default:
					t.Errorf("row %d in state %s (%s)", r.ID, r.State, r.LastError)
				}
			}
			if sent != row.sent || retry != row.retry {
				t.Fatalf("full disk: %d sent, %d retried; want %d, %d", sent, retry, row.sent, row.retry)
			}
			if n := countFiles(t, filepath.Join(dir, "new")); n != row.sent {
				t.Errorf("%d files in new/, want %d", n, row.sent)
			}
			if n := countFiles(t, filepath.Join(dir, "tmp")); n != 0 {
				t.Errorf("%d half-written files left in tmp/", n)
			}
			e.keepsAll(f.ID, items, queued)

			d.free()
			e.clk.Advance(outbox.RetryBase)
			e.send(ob)
			if n := e.outboxIn(store.OutboxSent); n != len(queued) {
				t.Fatalf("after freeing the disk %d of %d sent", n, len(queued))
			}
			seen := map[string]int{}
			entries, err := os.ReadDir(filepath.Join(dir, "new"))
			if err != nil {
				t.Fatal(err)
			}
			for _, de := range entries {
				b, err := os.ReadFile(filepath.Join(dir, "new", de.Name()))
				if err != nil {
					t.Fatal(err)
				}
				for line := range strings.SplitSeq(string(b), "\n") {
					if strings.HasPrefix(strings.ToLower(line), "message-id:") {
						seen[line]++
					}
				}
			}
			if len(seen) != len(queued) || len(entries) != len(queued) {
				t.Errorf("%d files with %d distinct Message-IDs, want %d", len(entries), len(seen), len(queued))
			}
			for _, addr := range readers {
				if b, _ := e.st.Balance(e.ctx, e.user(addr).ID); b != 9 {
					t.Errorf("%s: balance %d, want 9 (one charge)", addr, b)
				}
			}
		})
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}
