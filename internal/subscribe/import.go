package subscribe

import (
	"context"
	"fmt"
	"io"
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
	// Parallel is how many feeds are checked at once in all (default
	// DefaultImportParallel).
	Parallel int
	// PerHost is how many checks are in flight to one host at most
	// (default DefaultImportPerHost, the poller's limit). Hosts are told
	// apart as the poller tells them (store.HostOf: the name, whatever
	// the port).
	PerHost int
	// PerFeed bounds each feed's check (default 15 s), from when it starts.
	PerFeed time.Duration
	// Budget limits the feeds fetched (one check each, before it; the
	// ones past it fail, saying when to try again). Nil: no limit (the
	// operator's command).
	Budget Budget
	// Detailed gives the precise reason a check failed (FieldError.Why:
	// refused, timed out, the status…) rather than the coarse words the
	// public sees (the operator's command).
	Detailed bool
	// Progress, when not nil, is called after each feed (from one goroutine
	// at a time) with how many are done.
	Progress func(done, total int, r ImportResult)
}

// Defaults of ImportOptions.
const (
	DefaultImportParallel = 32
	// DefaultImportPerHost is poller.MaxInFlightPerHost: an import asks a
	// publisher no more at once than the poller does.
	DefaultImportPerHost = 2
)

// withDefaults fills the zero fields of opt.
func (opt ImportOptions) withDefaults() ImportOptions {
	if opt.Parallel <= 0 {
		opt.Parallel = DefaultImportParallel
	}
	if opt.PerHost <= 0 {
		opt.PerHost = DefaultImportPerHost
	}
	if opt.PerFeed <= 0 {
		opt.PerFeed = 15 * time.Second
	}
	return opt
}

// ImportOPML checks and subscribes u to every outline, then confirms or
// asks the person to confirm what was added. Each new feed is fetched first
// (many at a time, few per host) so that the report can say which failed
// and why; feeds the person already has, or that the list repeats, are not
// fetched. Results keep the outlines' order. Only a store failure is an
// error; with StopOnError it also stops the checks not started.
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

// ExportOPML writes u's subscriptions (not ended) as an OPML 2.0 list, with
// each feed's site (htmlUrl) and the folder an import put it in. OPML
// lists feeds, not deliveries: a feed the person gets in several places
// is one outline (in the folder of its first subscription), and importing
// the list again adds nothing.
func ExportOPML(ctx context.Context, st *store.Store, u *store.User, w io.Writer) error {
	subs, err := st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	outs := make([]opml.Outline, 0, len(subs))
	listed := make(map[int64]bool, len(subs))
	for _, s := range subs {
		if listed[s.FeedID] {
			continue
		}
		listed[s.FeedID] = true
		outs = append(outs, opml.Outline{Title: s.FeedTitle, XMLURL: s.FeedURL, HTMLURL: s.FeedSiteURL, Folder: s.Folder})
	}
	return opml.Write(w, "feedmail subscriptions of "+u.Email, outs)
}
