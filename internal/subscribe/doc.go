// Package subscribe owns the use cases that add feeds to a person: checking
// an address and a feed (FindFeed), subscribing (Subscribe), confirming
// (Confirm, PersonConfirmed) and importing or exporting an OPML list
// (ImportOPML, ExportOPML). The web handlers and the feedmail command both
// call it, so each rule is written once; where the two entry points differ
// today, the difference is an option of the request, named after what it
// does.
//
// It must not read HTTP requests or command-line flags, render pages, or
// print: callers check their own input format and present the result. It
// reaches the database only through package store, and takes the words of
// every email from package notices.
package subscribe

import (
	"log/slog"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
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
	// TrialCredits are granted on a person's first confirmation.
	TrialCredits int64
	// Log receives the failures a use case reports instead of returning.
	Log *slog.Logger
}
