package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
)

// Import outcomes.
const (
	ImportAdded   = "added"
	ImportAlready = "already"
	ImportFailed  = "failed"
)

// ImportResult is what happened to one feed of an OPML list.
type ImportResult struct {
	URL     string `json:"url"`
	Title   string `json:"title,omitempty"`
	Outcome string `json:"outcome"`          // ImportAdded, ImportAlready or ImportFailed
	Reason  string `json:"reason,omitempty"` // why it failed, in plain words
	// folder is the outline's folder, kept on the subscription.
	folder string
}

// ImportReport sorts the results of an import.
type ImportReport struct {
	Added   []ImportResult `json:"added"`
	Already []ImportResult `json:"already"`
	Failed  []ImportResult `json:"failed"`
}

// ImportOptions say how imported feeds are delivered and what follows.
type ImportOptions struct {
	DigestID *int64 // nil: instant
	// Confirmed makes the subscriptions active at once and counts as the
	// person's confirmation (the account link or the operator proved the
	// address). Otherwise they wait in "pending" and the person gets one
	// email asking to confirm them on the account page.
	Confirmed bool
	// ConfirmedBy is recorded as how Confirmed subscriptions were confirmed
	// (store.ConfirmedBy*; "" means the operator).
	ConfirmedBy string
	// KeepBouncing leaves the "bouncing" mark when a Confirmed import
	// confirms the person (the command; the account page clears it).
	KeepBouncing bool
	// StopOnError returns a store failure at once (the command). Otherwise
	// (the account page) it is logged, the report is still returned and the
	// added feeds still count as a confirmation.
	StopOnError bool
	// Parallel is how many feeds are fetched at once (default 4).
	Parallel int
	// PerFeed bounds each feed's check (default 15 s).
	PerFeed time.Duration
	// Progress, when not nil, is called after each feed (from one goroutine
	// at a time) with how many are done.
	Progress func(done, total int, r ImportResult)
}

// ImportOPML checks and subscribes u to every outline, then confirms or
// asks the person to confirm what was added. Each new feed is fetched first
// (several at a time) so that the report can say which failed and why;
// feeds the person already has are not fetched. Results keep the outlines'
// order. Only a store failure is an error.
func (s *Service) ImportOPML(ctx context.Context, u *store.User, outlines []opml.Outline, opt ImportOptions) (ImportReport, error) {
	rep, err := s.importFeeds(ctx, u.ID, outlines, opt)
	if err != nil {
		if opt.StopOnError {
			return rep, fmt.Errorf("import: %w", err)
		}
		s.Log.Error("opml import", "user", u.ID, "err", err)
	}
	if len(rep.Added) == 0 {
		return rep, nil
	}
	if err := s.afterImport(ctx, u, len(rep.Added), opt); err != nil {
		if opt.StopOnError {
			return rep, err
		}
		s.Log.Error("trial after import", "user", u.ID, "err", err)
	}
	return rep, nil
}

// afterImport makes a confirmed import count as the person's confirmation
// and asks the person to confirm an unconfirmed one.
func (s *Service) afterImport(ctx context.Context, u *store.User, added int, opt ImportOptions) error {
	switch {
	case opt.Confirmed && opt.KeepBouncing:
		if _, err := s.Store.MarkUserConfirmed(ctx, u.ID); err != nil {
			return err
		}
		_, err := s.grantTrial(ctx, u.ID)
		return err
	case opt.Confirmed:
		_, err := s.PersonConfirmed(ctx, u.ID)
		return err
	}
	key, n := notices.ImportConfirm(s.Links, s.Clock.Now(), u.ID, u.Email, added)
	_, err := s.Store.QueueNotice(ctx, u.ID, key, n)
	return err
}

// importRun is one import in progress: the results so far and what the
// person already has.
type importRun struct {
	s        *Service
	userID   int64
	opt      ImportOptions
	total    int
	results  []ImportResult
	mu       sync.Mutex // guards done, firstErr, have and Progress calls
	done     int
	firstErr error
	have     map[string]bool // feed URLs the person has, or the list repeats
}

// importFeeds subscribes the outlines, up to opt.Parallel feeds checked at
// once, and sorts the results.
func (s *Service) importFeeds(ctx context.Context, userID int64, outlines []opml.Outline, opt ImportOptions) (ImportReport, error) {
	if opt.Parallel <= 0 {
		opt.Parallel = 4
	}
	if opt.PerFeed <= 0 {
		opt.PerFeed = 15 * time.Second
	}
	run := &importRun{s: s, userID: userID, opt: opt, total: len(outlines),
		results: make([]ImportResult, len(outlines)), have: map[string]bool{}}
	subs, err := s.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return ImportReport{}, fmt.Errorf("subscriptions of user %d: %w", userID, err)
	}
	for _, sub := range subs {
		run.have[sub.FeedURL] = true
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, opt.Parallel)
	for i, o := range outlines {
		r, ok := run.triage(i, o)
		if !ok {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.Outcome, r.Reason = ImportFailed, "not checked: the import was stopped"
			run.finish(i, r)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			run.check(ctx, i, r)
		}()
	}
	wg.Wait()
	return run.report(), run.firstErr
}

// triage settles outline i without fetching when it can (not a web
// address, or a feed the person has); ok means it still needs a check.
func (run *importRun) triage(i int, o opml.Outline) (ImportResult, bool) {
	r := ImportResult{URL: o.XMLURL, Title: o.Title, folder: o.Folder}
	u, msg := NormalizeFeedURL(o.XMLURL)
	if msg != "" {
		r.Outcome, r.Reason = ImportFailed, "not a web address"
		run.finish(i, r)
		return r, false
	}
	r.URL = u
	run.mu.Lock()
	dup := run.have[u]
	run.have[u] = true // a repeated URL in the list counts as "already there"
	run.mu.Unlock()
	if dup {
		r.Outcome = ImportAlready
		run.finish(i, r)
		return r, false
	}
	return r, true
}

// check fetches and subscribes feed i; a store failure is kept as the
// run's error and the feed reported as failed.
func (run *importRun) check(ctx context.Context, i int, r ImportResult) {
	r, err := run.s.importOne(ctx, run.userID, r, run.opt)
	if err != nil {
		run.mu.Lock()
		if run.firstErr == nil {
			run.firstErr = err
		}
		run.mu.Unlock()
		r.Outcome, r.Reason = ImportFailed, "feedmail could not save it"
	}
	run.finish(i, r)
}

// finish records result i and reports progress.
func (run *importRun) finish(i int, r ImportResult) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.results[i] = r
	run.done++
	if run.opt.Progress != nil {
		run.opt.Progress(run.done, run.total, r)
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

// confirmedBy is how the import's subscriptions are confirmed ("" when
// they wait for the person).
func (opt ImportOptions) confirmedBy() string {
	switch {
	case !opt.Confirmed:
		return ""
	case opt.ConfirmedBy != "":
		return opt.ConfirmedBy
	}
	return store.ConfirmedByOperator
}

// importOne finds (FindFeed: a feed, or the one feed a site's page
// advertises) and subscribes one feed, in its folder.
func (s *Service) importOne(ctx context.Context, userID int64, r ImportResult, opt ImportOptions) (ImportResult, error) {
	fctx, cancel := context.WithTimeout(ctx, opt.PerFeed)
	defer cancel()
	found, err := s.FindFeed(fctx, r.URL)
	var fe FieldError
	switch {
	case errors.As(err, &fe):
		r.Outcome, r.Reason = ImportFailed, fe.Msg
		return r, nil
	case err != nil:
		return r, err
	case len(found.Candidates) > 0:
		r.Outcome, r.Reason = ImportFailed, "that page advertises "+strconv.Itoa(len(found.Candidates))+
			" feeds; add the one you want by its own address"
		return r, nil
	}
	if found.Title == "" {
		found.Title = r.Title
	}
	feed, title, err := s.feed(ctx, found)
	if err != nil {
		return r, err
	}
	if r.Title == "" {
		r.Title = title
	}
	existing, err := s.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return r, err
	}
	for _, sub := range existing {
		if sub.FeedID == feed.ID {
			r.Outcome = ImportAlready
			return r, nil
		}
	}
	sub, err := s.Store.SubscribeConfirmedBy(ctx, userID, feed.ID, opt.DigestID, opt.confirmedBy())
	if err != nil {
		return r, err
	}
	if r.folder != "" {
		if err := s.Store.SetSubscriptionFolder(ctx, sub.ID, r.folder); err != nil {
			return r, err
		}
	}
	r.URL, r.Outcome = feed.URL, ImportAdded
	return r, nil
}

// ExportOPML writes u's subscriptions (not ended) as an OPML 2.0 list, with
// each feed's site (htmlUrl) and the folder an import put it in.
func ExportOPML(ctx context.Context, st *store.Store, u *store.User, w io.Writer) error {
	subs, err := st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	outs := make([]opml.Outline, 0, len(subs))
	for _, s := range subs {
		outs = append(outs, opml.Outline{Title: s.FeedTitle, XMLURL: s.FeedURL, HTMLURL: s.FeedSiteURL, Folder: s.Folder})
	}
	return opml.Write(w, "feedmail subscriptions of "+u.Email, outs)
}
