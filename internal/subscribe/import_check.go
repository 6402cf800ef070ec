package subscribe

import (
	"context"
	"errors"
	"strconv"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// checkAll checks every job (fetch and parse, checkOne), opt.Parallel at a
// time and at most opt.PerHost per host, handing each feed found to w and
// finishing each failure. Jobs not started when ctx ends are finished as
// not checked. It returns when every check has.
func (run *importRun) checkAll(ctx context.Context, jobs []importJob, w *importWriter) {
	hostOf := func(j importJob) string { return store.HostOf(j.r.URL) }
	left := perHost(ctx, jobs, hostOf, run.opt.Parallel, run.opt.PerHost, func(j importJob) {
		c := run.checkOne(ctx, j)
		if c.job.r.Outcome == ImportFailed {
			run.finish(c.job.i, c.job.r)
			return
		}
		w.add(c)
	})
	for _, j := range left {
		j.r.Outcome, j.r.Reason = ImportFailed, reasonNotChecked
		run.finish(j.i, j.r)
	}
}

// withinBudget spends one check of opt.Budget for each job, in the list's
// order and one at a time, and returns the jobs it allowed; the others
// are finished as failed, saying when to try again (or not checked, when
// the budget could not be read).
func (run *importRun) withinBudget(ctx context.Context, jobs []importJob) []importJob {
	if run.opt.Budget == nil {
		return jobs
	}
	ok := jobs[:0]
	for _, j := range jobs {
		var be *BudgetError
		switch err := spend(ctx, run.opt.Budget); {
		case err == nil:
			ok = append(ok, j)
			continue
		case errors.As(err, &be):
			j.r.Outcome, j.r.Reason = ImportFailed, "not checked: "+be.Error()
		default:
			run.s.Log.Error("opml import: fetch budget", "user", run.userID, "err", err)
			j.r.Outcome, j.r.Reason = ImportFailed, reasonNotChecked
		}
		run.finish(j.i, j.r)
	}
	return ok
}

// checked is a feed a check found, on its way to the writer: the job, what
// was found, and the document fetched, parsed with the feed's URL as its
// base (nil when the feed was not fetched).
type checked struct {
	job   importJob
	found Found
	doc   *newitems.Document
}

// checkOne fetches and parses job j's address within opt.PerFeed (FindFeed's
// fetch: a feed, or the one feed a page advertises). A problem comes back
// as the job's result, failed with the reason in plain words (coarse
// unless opt.Detailed).
func (run *importRun) checkOne(ctx context.Context, j importJob) checked {
	fctx, cancel := context.WithTimeout(ctx, run.opt.PerFeed)
	defer cancel()
	found, err := run.s.findFeedDepth(fctx, j.r.URL, 0)
	var fe FieldError
	switch {
	case errors.As(err, &fe) && ctx.Err() != nil:
		j.r.Outcome, j.r.Reason = ImportFailed, reasonNotChecked
	case errors.As(err, &fe) && run.opt.Detailed:
		j.r.Outcome, j.r.Reason = ImportFailed, fe.Why()
	case errors.As(err, &fe):
		j.r.Outcome, j.r.Reason = ImportFailed, fe.Msg
	case err != nil:
		j.r.Outcome, j.r.Reason = ImportFailed, reasonNotSaved
	case len(found.Candidates) > 0:
		j.r.Outcome, j.r.Reason = ImportFailed, "that page advertises "+strconv.Itoa(len(found.Candidates))+
			" feeds; add the one you want by its own address"
	}
	if j.r.Outcome == ImportFailed {
		return checked{job: j}
	}
	c := checked{job: j, found: found}
	if d := found.doc; d != nil {
		c.found.doc = nil // the body is not needed any more: only the parsed feed travels on
		// Relative links resolve against the feed's own address, as the
		// poller's parse of it will.
		c.doc = d.document(found.URL)
	}
	return c
}
