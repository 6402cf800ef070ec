package subscribe

import (
	"context"
	"fmt"
	"sync"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
)

// An import runs in three steps, each of its own file:
//
//  1. triage (this file): the person's subscriptions are read once; each
//     outline that is not a web address, or names a feed the person has or
//     the list already named, is settled at once; the feeds feedmail knows
//     are read in a few statements, and those it polled lately or stopped
//     polling are settled without a fetch.
//  2. checks (import_check.go): the others spend the Budget, in order, and
//     those within it are fetched and parsed, many at a time but at most
//     PerHost per host, the hosts served in turn.
//  3. writes (import_write.go): one goroutine takes the checked feeds as
//     they come and writes them in chunks: feeds, baselines and
//     subscriptions, a few statements a chunk.
//
// Results stream from one step to the next: no step holds more than a
// chunk of fetched documents.

// Import failure reasons that are not a check's.
const (
	reasonNotChecked = "not checked: the import was stopped"
	reasonStopped    = "not saved: the import was stopped"
	reasonNotSaved   = "feedmail could not save it"
)

// importRun is one import in progress: the results so far and what the
// person already has.
type importRun struct {
	s      *Service
	userID int64
	opt    ImportOptions
	// stop ends the checks not started (a store failure under StopOnError).
	stop func()

	mu       sync.Mutex // guards results, done, firstErr and Progress calls
	results  []ImportResult
	done     int
	firstErr error

	// Owned by the triage, then by the writer alone: the feed URLs the
	// person has or the list named, and the feeds the person has or the
	// import added.
	haveURL  map[string]bool
	haveFeed map[int64]bool
}

// importFeeds runs the three steps and sorts the results.
func (s *Service) importFeeds(ctx context.Context, userID int64, outlines []opml.Outline, opt ImportOptions) (ImportReport, error) {
	opt = opt.withDefaults()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	run := &importRun{s: s, userID: userID, opt: opt, stop: stop, results: make([]ImportResult, len(outlines)),
		haveURL: map[string]bool{}, haveFeed: map[int64]bool{}}
	subs, err := s.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return ImportReport{}, fmt.Errorf("subscriptions of user %d: %w", userID, err)
	}
	for _, sub := range subs {
		run.haveURL[sub.FeedURL], run.haveFeed[sub.FeedID] = true, true
	}
	jobs := run.triage(outlines)
	known, err := s.Store.FeedsByURL(ctx, jobURLs(jobs))
	if err != nil {
		return ImportReport{}, fmt.Errorf("feeds of the list: %w", err)
	}
	w := run.startWriter(ctx)
	fetch := jobs[:0]
	for _, j := range jobs {
		if f := known[j.r.URL]; f != nil && run.settleKnown(j, f, w) {
			continue
		}
		fetch = append(fetch, j)
	}
	run.checkAll(ctx, run.withinBudget(ctx, fetch), w)
	w.close()
	return run.report(), run.firstErr
}

// importJob is an outline that needs more than the triage: its index in
// the list and its result so far (URL normalized).
type importJob struct {
	i int
	r ImportResult
}

func jobURLs(jobs []importJob) []string {
	out := make([]string, len(jobs))
	for k, j := range jobs {
		out[k] = j.r.URL
	}
	return out
}

// triage settles every outline it can without the database or a fetch
// (not a web address, a feed the person has, a repeat) and returns the
// others, in the list's order.
func (run *importRun) triage(outlines []opml.Outline) []importJob {
	var jobs []importJob
	for i, o := range outlines {
		r := ImportResult{URL: o.XMLURL, Title: o.Title, folder: o.Folder}
		u, msg := NormalizeFeedURL(o.XMLURL)
		switch {
		case msg != "":
			r.Outcome, r.Reason = ImportFailed, "not a web address"
		case run.haveURL[u]:
			r.URL, r.Outcome = u, ImportAlready // a repeated URL in the list counts as "already there"
		default:
			r.URL = u
			run.haveURL[u] = true
			jobs = append(jobs, importJob{i: i, r: r})
			continue
		}
		run.finish(i, r)
	}
	return jobs
}

// settleKnown settles job j, whose URL is feed f's, without fetching it
// when it can (see knownFeed): a failure is finished here, a feed polled
// lately goes to the writer as found. It reports whether j is settled.
func (run *importRun) settleKnown(j importJob, f *store.Feed, w *importWriter) bool {
	found, settled, err := run.s.knownFeed(f)
	switch {
	case !settled:
		return false
	case err != nil:
		j.r.Outcome, j.r.Reason = ImportFailed, err.Error()
		run.finish(j.i, j.r)
	default:
		w.add(checked{job: j, found: found})
	}
	return true
}

// finish records result i and reports progress.
func (run *importRun) finish(i int, r ImportResult) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.results[i] = r
	run.done++
	if run.opt.Progress != nil {
		run.opt.Progress(run.done, len(run.results), r)
	}
}

// failStore records a store failure: the run's error is the first, and
// under StopOnError the checks not started are stopped.
func (run *importRun) failStore(err error) {
	run.mu.Lock()
	if run.firstErr == nil {
		run.firstErr = err
	}
	run.mu.Unlock()
	if run.opt.StopOnError {
		run.stop()
	}
}

// report sorts the results by outcome, keeping their order.
func (run *importRun) report() ImportReport {
	var rep ImportReport
	for _, r := range run.results {
		switch r.Outcome {
		case ImportAdded:
			rep.Added = append(rep.Added, r)
		case ImportAlready:
			rep.Already = append(rep.Already, r)
		default:
			rep.Failed = append(rep.Failed, r)
		}
	}
	return rep
}
