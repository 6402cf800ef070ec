package subscribe

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"strings"
	"sync"

	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/opml"
)

// A readers' import takes many people's lists at once (an operator moving
// a service's readers onto feedmail) in two steps running side by side:
// the triage (this file) reads the lists as they come, checks each
// address and entry, and fills batches; the writer (readers_write.go)
// writes each batch in one transaction. No feed is fetched: feeds
// feedmail knows are linked, new ones are added due at once and their
// first poll checks them (and baselines them: nothing already published
// is mailed). Memory stays flat: a batch of lists at a time, and a set of
// 8-byte hashes of the mailboxes seen.

// ReaderList is one person's list as an import hands it in.
type ReaderList struct {
	Email    string
	Source   string // where it came from (a file name), for the report
	Outlines []opml.Outline
	// Err says why the list could not be read: the person is reported
	// (ProblemBadList) and skipped, the import goes on.
	Err error
}

// ReadersFromFolders yields the lists of folders of OPML files, one file
// per person named by their address (ADDRESS.opml; opml.Folder), each
// folder in turn; an error reading a folder is yielded and ends it.
func ReadersFromFolders(dirs []string) iter.Seq2[ReaderList, error] {
	return func(yield func(ReaderList, error) bool) {
		for _, dir := range dirs {
			for l, err := range opml.Folder(dir) {
				if !yield(ReaderList{Email: l.Name, Source: l.Path, Outlines: l.Outlines, Err: l.Err}, err) || err != nil {
					return
				}
			}
		}
	}
}

// ReaderProblem is one entry an import did not take, and why.
type ReaderProblem struct {
	Source string `json:"source,omitempty"`
	Email  string `json:"email"`
	URL    string `json:"url,omitempty"` // "" when it is about the person
	Kind   string `json:"kind"`          // Problem*
	Reason string `json:"reason"`
}

// ReadersSummary counts what an import did.
type ReadersSummary struct {
	Lists        int `json:"lists"`         // lists read
	Readers      int `json:"readers"`       // people imported (created or found)
	Created      int `json:"created"`       // of them, accounts created
	SkippedLists int `json:"skipped_lists"` // lists not imported at all (see the problems)
	Added        int `json:"added"`         // subscriptions added (or taken up again)
	Already      int `json:"already"`       // subscriptions the person had
	Failed       int `json:"failed"`        // feed entries not imported
	Notices      int `json:"notices"`       // confirmation emails queued (not confirmed imports)
	Problems     int `json:"problems"`
}

// add adds o's counts (Lists and Problems aside: the triage and problem
// count those).
func (s *ReadersSummary) add(o ReadersSummary) {
	s.Readers += o.Readers
	s.Created += o.Created
	s.SkippedLists += o.SkippedLists
	s.Added += o.Added
	s.Already += o.Already
	s.Failed += o.Failed
	s.Notices += o.Notices
}

// ReadersOptions say how an import's subscriptions start and what it tells.
type ReadersOptions struct {
	// Confirmed makes every subscription active at once and counts as each
	// person's confirmation (the operator vouches for the addresses): no
	// email is sent. Otherwise they wait in "pending" and each person gets
	// one email asking to confirm them.
	Confirmed bool
	// Batch is how many lists one transaction writes (default
	// DefaultReadersBatch).
	Batch int
	// Problem, when not nil, receives each problem as it is found (from one
	// goroutine at a time).
	Problem func(ReaderProblem)
	// Progress, when not nil, receives the counts after each batch.
	Progress func(ReadersSummary)
}

// DefaultReadersBatch is how many lists a transaction writes by default:
// a few hundred people, a few statements each kind of row.
const DefaultReadersBatch = 250

// readerEntry is a list the triage took: the address as stored and the
// feeds still in it.
type readerEntry struct {
	source, email string
	feeds         []readerFeed
}

// readerFeed is one feed of a list, its URL normalized.
type readerFeed struct{ url, title, folder string }

// readersRun is one import in progress.
type readersRun struct {
	s    *Service
	opt  ReadersOptions
	seed maphash.Seed
	seen map[uint64]bool // hashes of the mailboxes read so far (triage only)

	mu  sync.Mutex // guards sum and the callbacks
	sum ReadersSummary
}

// ImportReaders imports every list lists yields, in batches of opt.Batch
// people, one transaction each, and returns the counts. Problems with an
// entry are reported through opt.Problem and counted, never returned; an
// error is a store failure or lists' own (the input could not be read):
// it stops the import, and the lists read before it are written.
func (s *Service) ImportReaders(ctx context.Context, lists iter.Seq2[ReaderList, error], opt ReadersOptions) (ReadersSummary, error) {
	if opt.Batch <= 0 {
		opt.Batch = DefaultReadersBatch
	}
	run := &readersRun{s: s, opt: opt, seed: maphash.MakeSeed(), seen: map[uint64]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []readerEntry, 1)
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for b := range batches {
			if werr == nil {
				if werr = run.writeBatch(ctx, b); werr != nil {
					cancel()
				}
			}
		}
	})
	rerr := run.feed(ctx, lists, batches)
	close(batches)
	wg.Wait()
	if err := errors.Join(werr, rerr); err != nil {
		return run.summary(), fmt.Errorf("import readers: %w", err)
	}
	return run.summary(), nil
}

// feed triages every list and sends the batches, until lists ends, fails,
// or ctx ends (the writer failed).
func (run *readersRun) feed(ctx context.Context, lists iter.Seq2[ReaderList, error], batches chan<- []readerEntry) error {
	var batch []readerEntry
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
			batch = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	for l, err := range lists {
		if err != nil {
			send() // what was read before is written
			return err
		}
		if e, ok := run.triage(l); ok {
			batch = append(batch, e)
		}
		if len(batch) >= run.opt.Batch && !send() {
			return nil
		}
	}
	send()
	return nil
}

// triage checks one list (a list that could not be read and names no
// address is a malformed list, not an invalid address): its address, whether the input named the same
// mailbox before, and each entry's URL. It reports each problem and
// returns the entry to write, or false when nothing of the list is left.
func (run *readersRun) triage(l ReaderList) (readerEntry, bool) {
	run.count(func(s *ReadersSummary) { s.Lists++ })
	skip := func(kind, reason string) (readerEntry, bool) {
		run.problem(ReaderProblem{Source: l.Source, Email: l.Email, Kind: kind, Reason: reason})
		run.count(func(s *ReadersSummary) { s.SkippedLists++ })
		return readerEntry{}, false
	}
	if l.Err != nil && strings.TrimSpace(l.Email) == "" {
		return skip(ProblemBadList, l.Err.Error()) // unreadable, and names nobody
	}
	email, kind, why := CheckReaderAddress(l.Email)
	if kind != "" {
		return skip(kind, why)
	}
	h := maphash.String(run.seed, mailaddr.Mailbox(email))
	if run.seen[h] {
		return skip(ProblemDuplicateReader, "the input named this mailbox before; this list is not imported")
	}
	run.seen[h] = true
	if l.Err != nil {
		return skip(ProblemBadList, l.Err.Error())
	}
	e := readerEntry{source: l.Source, email: email, feeds: make([]readerFeed, 0, len(l.Outlines))}
	have := make(map[string]bool, len(l.Outlines))
	for _, o := range l.Outlines {
		u, msg := NormalizeFeedURL(o.XMLURL)
		switch {
		case msg != "":
			run.feedProblem(e, o.XMLURL, ProblemBadURL, msg)
		case have[u]:
			run.feedProblem(e, u, ProblemDuplicateSub, "the list names this feed twice")
		default:
			have[u] = true
			e.feeds = append(e.feeds, readerFeed{url: u, title: o.Title, folder: o.Folder})
		}
	}
	if len(e.feeds) == 0 {
		return skip(ProblemBadList, "no feed of the list can be imported")
	}
	return e, true
}

// feedProblem reports a problem with one feed of e's list (an entry not
// imported).
func (run *readersRun) feedProblem(e readerEntry, url, kind, reason string) {
	run.problem(ReaderProblem{Source: e.source, Email: e.email, URL: url, Kind: kind, Reason: reason})
	if kind == ProblemDuplicateSub {
		run.count(func(s *ReadersSummary) { s.Already++ })
		return
	}
	run.count(func(s *ReadersSummary) { s.Failed++ })
}

// problem counts p and hands it to opt.Problem.
func (run *readersRun) problem(p ReaderProblem) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.sum.Problems++
	if run.opt.Problem != nil {
		run.opt.Problem(p)
	}
}

// count applies f to the counts.
func (run *readersRun) count(f func(*ReadersSummary)) {
	run.mu.Lock()
	defer run.mu.Unlock()
	f(&run.sum)
}

// summary returns the counts so far.
func (run *readersRun) summary() ReadersSummary {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.sum
}
