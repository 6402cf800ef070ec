package outbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestJournalRecordsADeadPassesAcceptances: a worker keeping a journal
// dies after the server accepted messages whose marks were still waiting
// for their commit. Its successor on the same machine replays the journal
// before the lease runs out: the accepted rows are recorded under the dead
// owner's name and not sent again. Without a journal the same deaths send
// up to MaxUnmarked (+ one per connection) twice (TestOutboxCrashAtEachStep);
// with it, only a message still on the wire when the process died can.
func TestJournalRecordsADeadPassesAcceptances(t *testing.T) {
	const emails, pool, maxUnmarked = 12, 2, 4
	cases := []struct {
		step    string
		at      int // "accepted": the acceptance (1-based) the process dies after
		maxDups int
	}{
		{step: "sent"},
		{step: "accepted", at: 5, maxDups: pool},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/at-%d", c.step, c.at), func(t *testing.T) {
			fx, dying, u := twoProcesses(t, "journal@example.net", emails)
			srv := smtptest.StartT(t, smtptest.Options{})
			dir := t.TempDir()
			params := fmt.Sprintf("pool=%d", pool)
			a := fx.outbox(smtpTo(t, srv, params), "dies", func(cfg *OutboxConfig) {
				cfg.Store, cfg.MaxUnmarked, cfg.JournalDir = dying, maxUnmarked, dir
				cfg.MarkPace = time.Hour // marks wait for MaxUnmarked: the window is as wide as it gets
			})
			var seen atomic.Int64
			a.crash = func(step string) bool {
				return step == c.step && (step != "accepted" || seen.Add(1) == int64(c.at))
			}
			if _, err := a.SendDue(context.Background()); err == nil {
				t.Fatal("the dying pass reported success")
			}
			left, _ := filepath.Glob(filepath.Join(dir, "*"+journalExt))
			if len(left) != 1 {
				t.Fatalf("%d journals left by the dead pass, want 1", len(left))
			}
			b := fx.outbox(smtpTo(t, srv, params), "successor", func(cfg *OutboxConfig) { cfg.JournalDir = dir })
			n, err := b.ReplayJournals(context.Background())
			if err != nil || n == 0 {
				t.Fatalf("replay: recorded %d, %v; want some recorded", n, err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("files left after the replay: %v", left)
			}
			fx.clk.Advance(5*time.Minute + time.Second)
			fx.pass(b)
			counts := byMessageID(srv)
			dups := duplicates(counts)
			t.Logf("death after %q: %d recorded from the journal, %d duplicate(s) on the wire", c.step, n, dups)
			if len(counts) != emails || dups > c.maxDups {
				t.Errorf("%d distinct emails arrived, %d twice; want %d, at most %d twice", len(counts), dups, emails, c.maxDups)
			}
			var sent int64
			fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
			if e := fx.entries(u); sent != emails || e[store.LedgerCharge] != emails {
				t.Errorf("%d rows sent, ledger %v; want %d sent and charged once", sent, e, emails)
			}
		})
	}
}

// TestJournalOfALivePassIsNotReplayed: a journal whose pass still runs
// (its lock held) is left alone, and one whose pass ended cleanly is gone.
func TestJournalOfALivePassIsNotReplayed(t *testing.T) {
	fx := newFixture(t)
	dir := t.TempDir()
	o := fx.outbox(smtpTo(t, smtptest.StartT(t, smtptest.Options{}), ""), "live", func(cfg *OutboxConfig) { cfg.JournalDir = dir })
	j := o.beginJournal()
	if j == nil {
		t.Fatal("no journal made")
	}
	if err := j.add(store.SentMark{ID: 1, UserID: 1, MessageID: "<x@y>"}); err != nil {
		t.Fatal(err)
	}
	if n, err := o.ReplayJournals(context.Background()); n != 0 || err != nil {
		t.Errorf("replayed a live pass's journal: %d, %v", n, err)
	}
	if _, err := os.Stat(j.path); err != nil {
		t.Errorf("the live journal is gone: %v", err)
	}
	j.end(false)
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("files left after a clean end: %v", left)
	}
}

// TestParseMark: journal lines, whole or damaged.
// A mailer that stops removes its journal folder when it is empty (one
// folder per install: a machine running many installs, or a test suite,
// used to keep one empty folder each), and leaves it when a journal or
// anything else is in it.
func TestRunRemovesAnEmptyJournalFolder(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("something_in_it=%v", keep), func(t *testing.T) {
			fx := newFixture(t)
			dir := filepath.Join(t.TempDir(), "journals")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if keep {
				if err := os.WriteFile(filepath.Join(dir, "not-a-journal"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o := fx.outbox(smtpTo(t, smtptest.StartT(t, smtptest.Options{}), ""), "stops", func(cfg *OutboxConfig) { cfg.JournalDir = dir })
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := o.Run(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(dir)
			if gone := errors.Is(err, fs.ErrNotExist); gone == keep {
				t.Errorf("journal folder gone: %v (stat: %v); want gone: %v", gone, err, !keep)
			}
			if j := o.beginJournal(); j == nil {
				t.Error("no journal made after the folder was removed")
			} else {
				j.end(false)
			}
		})
	}
}

func TestParseMark(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
		want store.SentMark
	}{
		{"12\t3\t\t1\t<a@b>", true, store.SentMark{ID: 12, UserID: 3, NoBounces: true, MessageID: "<a@b>"}},
		{"12\t3\twebhook\t0\tfeedmail-12", true, store.SentMark{ID: 12, UserID: 3, Channel: "webhook", MessageID: "feedmail-12"}},
		{"12\t3\t\t1", false, store.SentMark{}},
		{"x\t3\t\t1\t<a@b>", false, store.SentMark{}},
		{"0\t3\t\t1\t<a@b>", false, store.SentMark{}},
		{"", false, store.SentMark{}},
	} {
		got, ok := parseMark(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("parseMark(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
