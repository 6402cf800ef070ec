// Package subscribe owns the use cases that add feeds to a person:
// FindFeed, Subscribe, Confirm, PersonConfirmed, ImportOPML and ExportOPML.
// The web handlers and the feedmail command both call it, so each rule is
// written once; where the two entry points differ, the difference is an
// option of the request. It must not read HTTP requests or flags, render or
// print; it reaches the database only through package store and takes the
// words of every email from package notices.
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
