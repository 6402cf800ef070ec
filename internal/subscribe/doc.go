// Package subscribe owns the use cases that add feeds to a person:
// FindFeed, Subscribe, Confirm, PersonConfirmed, ImportOPML, ImportReaders
// and ExportOPML.
// The web handlers and the feedmail command both call it, so each rule is
// written once; where the two entry points differ, the difference is an
// option of the request. It must not read HTTP requests or flags, render or
// print; it reaches the database only through package store and takes the
// words of every email from package notices.
//
// An import of thousands of feeds checks many at once, never more per host
// than the poller asks, and writes them in chunks (import_run.go).
package subscribe

import (
	"context"
	"log/slog"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Service runs the use cases against one store.
type Service struct {
	Store *store.Store
	// Links builds the confirmation and account links in the emails.
	Links links.Links
	Clock clock.Clock
	// Fetch fetches feeds to check them (FindFeed, ImportOPML).
	Fetch *fetcher.Client
	// Baseline records the feed document a check fetched (signup, OPML
	// import) as what the person saw: on a feed never polled, its items
	// are seen and not mailed, so the first post after it reaches the
	// person once they confirm, whichever process polls first. Nil skips
	// it (the first poll after confirmation is then the baseline).
	Baseline Baseliner
	// TrialCredits are granted on a person's first confirmation.
	TrialCredits int64
	// Log receives the failures a use case reports instead of returning.
	Log *slog.Logger
}

// Baseliner records fetched feed documents, by feed id, through the
// poller's own select → record path in one write (poller.Poller.Baselines):
// each counts as a poll of its feed, so the feed is not fetched again at
// once (a signup records one, an OPML import a chunk at a time).
type Baseliner interface {
	Baselines(ctx context.Context, docs map[int64]newitems.Document) error
}
