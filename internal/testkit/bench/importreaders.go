package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// importReaders: cfg.Readers people move onto feedmail at once, each with
// an OPML file of 2 feeds drawn from cfg.Feeds, through the use case
// `feedmail import-readers --confirmed FOLDER` runs: the folder read, each
// address and entry checked, accounts, feeds and subscriptions written a
// batch of people per transaction, the people confirmed with their trial.
// Every thousandth list carries a malformed entry, which must be reported.
// The bare loop writes the same users, feeds, subscriptions and trial
// grants with hand-built multi-row INSERTs in transactions of the same
// size (no files, no checks), in a fresh database of its own. With Keep
// the folder of lists stays, for the command to be run on it.
func (e *env) importReaders(ctx context.Context) (Row, error) {
	n, nf := e.cfg.Readers, e.cfg.Feeds
	row := Row{Unit: "subscriptions", Count: 2 * n, Work: fmt.Sprintf(
		"%d readers' OPML files (2 feeds each of %d; every 1000th with a bad entry): read, check, write %d a transaction, confirm, trial",
		n, nf, subscribe.DefaultReadersBatch)}
	dir, err := os.MkdirTemp("", "feedmail-bench-readers-")
	if err != nil {
		return row, err
	}
	if !e.cfg.Keep {
		defer os.RemoveAll(dir)
	}
	stop := e.progress("import-readers: writing the lists", func() string { return "" })
	err = writeReaderLists(dir, n, nf)
	stop()
	if err != nil {
		return row, err
	}
	base, err := e.bareReaders(ctx, n, nf)
	if err != nil {
		return row, fmt.Errorf("bare loop: %w", err)
	}
	row.Baseline = base
	svc := &subscribe.Service{Store: e.st, Clock: e.clk, TrialCredits: 100, Log: e.cfg.Log.With("role", "import-readers")}
	var added atomic.Int64
	var problems atomic.Int64
	opt := subscribe.ReadersOptions{Confirmed: true,
		Problem:  func(subscribe.ReaderProblem) { problems.Add(1) },
		Progress: func(s subscribe.ReadersSummary) { added.Store(int64(s.Added)) }}
	stop = e.progress("import-readers", func() string { return fmt.Sprintf("%d/%d subscriptions", added.Load(), 2*n) })
	var sum subscribe.ReadersSummary
	var heap heapPeak
	err = e.measure(ctx, &row, func(ctx context.Context) error {
		defer heap.start()()
		sum, err = svc.ImportReaders(ctx, subscribe.ReadersFromFolders([]string{dir}), opt)
		return err
	})
	stop()
	if err != nil {
		return row, err
	}
	row.Note = fmt.Sprintf("%d readers (%.0f/s), %d subscriptions, %d problems; live heap %s before, %s at most",
		sum.Readers, float64(sum.Readers)/row.Elapsed.Seconds(), sum.Added, sum.Problems, mib(heap.before), mib(heap.most))
	if e.cfg.Keep {
		row.Note += "; lists kept in " + dir
	}
	if sum.Readers != n || sum.Added != 2*n || sum.Problems != n/1000 || problems.Load() != int64(n/1000) {
		return row, checkf("%+v, want %d readers, %d added, %d problems", sum, n, 2*n, n/1000)
	}
	return row, e.checkReaders(ctx, n)
}

// readerFeeds returns the two feeds (indices under nf) of reader i: spread
// by a hash, so that some feeds are shared and some are nobody's.
func readerFeeds(i, nf int) (int, int) {
	h := func(x uint64) uint64 { // splitmix64
		x += 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		return x ^ (x >> 31)
	}
	a := int(h(uint64(2*i)) % uint64(nf))
	b := int(h(uint64(2*i+1)) % uint64(nf))
	if b == a {
		b = (a + 1) % nf
	}
	return a, b
}

func readerEmail(i int) string { return fmt.Sprintf("r%d@mail%d.readers-bench.net", i, i%100) }

func readerFeedURL(k int) string { return fmt.Sprintf("https://h%d.feeds-bench.net/f/%d", k%1000, k) }

// writeReaderLists writes n OPML files into dir, one per reader.
func writeReaderLists(dir string, n, nf int) error {
	var b bytes.Buffer
	for i := range n {
		fa, fb := readerFeeds(i, nf)
		outs := []opml.Outline{{Title: fmt.Sprint("Feed ", fa), XMLURL: readerFeedURL(fa), Folder: "Moved"},
			{Title: fmt.Sprint("Feed ", fb), XMLURL: readerFeedURL(fb)}}
		if i%1000 == 999 {
			outs = append(outs, opml.Outline{XMLURL: "mailto:" + readerEmail(i)})
		}
		b.Reset()
		if err := opml.Write(&b, "moving", outs); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, readerEmail(i)+".opml"), b.Bytes(), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// checkReaders checks that the import left n confirmed readers with two
// active subscriptions each and their trial, and queued no email.
func (e *env) checkReaders(ctx context.Context, n int) error {
	var users, subs, trials, queued int64
	db := e.st.DB.WithContext(ctx)
	err := db.Raw("SELECT COUNT(*) FROM users WHERE email LIKE '%@mail%.readers-bench.net' AND confirmed_at IS NOT NULL AND balance = 100").
		Scan(&users).Error
	if err == nil {
		err = db.Raw(`SELECT COUNT(*) FROM subscriptions s JOIN users u ON u.id = s.user_id
WHERE u.email LIKE '%@mail%.readers-bench.net' AND s.state = 'active'`).Scan(&subs).Error
	}
	if err == nil {
		err = db.Raw("SELECT COUNT(*) FROM ledger_entries WHERE reason = 'trial credits'").Scan(&trials).Error
	}
	if err == nil {
		err = db.Raw("SELECT COUNT(*) FROM outbox").Scan(&queued).Error
	}
	if err != nil {
		return err
	}
	if users != int64(n) || subs != int64(2*n) || trials < int64(n) || queued != 0 {
		return checkf("%d confirmed readers with their trial, %d active subscriptions, %d trial grants, %d emails queued; want %d, %d, %d, 0",
			users, subs, trials, queued, n, 2*n, n)
	}
	return nil
}

// bareReaders times the bare loop: the import's rows written with
// hand-built multi-row INSERTs, a batch of readers per transaction, into a
// fresh database of its own (fresh as the import's: same tables, same
// indexes, no statistics yet).
func (e *env) bareReaders(ctx context.Context, n, nf int) (*Baseline, error) {
	be := &env{cfg: e.cfg, clk: e.clk, trips: &tripCounter{}}
	be.cfg.Keep = false // its database goes whatever the run keeps
	defer be.close()
	if err := be.openDB(ctx); err != nil {
		return nil, err
	}
	var row Row
	stop := e.progress("import-readers: bare loop", func() string { return "" })
	err := be.measure(ctx, &row, func(ctx context.Context) error {
		for start := 0; start < n; start += subscribe.DefaultReadersBatch {
			end := min(start+subscribe.DefaultReadersBatch, n)
			if err := be.st.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return be.bareBatch(tx, start, end, nf) }); err != nil {
				return err
			}
		}
		return nil
	})
	stop()
	if err != nil {
		return nil, err
	}
	return &Baseline{Name: "bare multi-row INSERTs of the same rows (users, feeds, subscriptions, trial grants), same batches, a fresh database",
		Elapsed: row.Elapsed}, nil
}
