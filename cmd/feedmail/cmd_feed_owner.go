package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// feedOwnerSubs returns the `feed owner` subcommands, in the order help
// lists them.
func feedOwnerSubs() []subcommand {
	return []subcommand{
		{"set", "--feed URL --email OWNER", "make OWNER (the feed's verified publisher; account created if missing) pay for all its readers, current and future (JSON)", cmdFeedOwnerSet},
		{"clear", "--feed URL", "end owner payment: the feed's readers pay for it again (JSON)", cmdFeedOwnerClear},
	}
}

// cmdFeedOwner dispatches `feedmail feed owner set|clear`.
func cmdFeedOwner(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, "feed owner", args)
}

// feedOwnerJSON is what `feed owner set|clear` print.
type feedOwnerJSON struct {
	Feed       string     `json:"feed"`
	Owner      string     `json:"owner,omitempty"`
	VerifiedBy string     `json:"verified_by,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Balance    *int64     `json:"owner_balance,omitempty"`
	Readers    int        `json:"readers"`
	Cleared    *bool      `json:"cleared,omitempty"`
	// CreditsRanOutAt starts the readers' notice period (owner-paid feeds
	// in docs/design.md), in `feed status` only.
	CreditsRanOutAt *time.Time `json:"credits_ran_out_at,omitempty"`
}

// feedOwnerOf is the owner part of `feed status`: nil for a feed its
// readers pay for.
func feedOwnerOf(ctx context.Context, s *store.Store, f *store.Feed) (*feedOwnerJSON, error) {
	o, err := s.FeedOwnerOf(ctx, f.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, err := s.UserByID(ctx, o.UserID)
	if err != nil {
		return nil, err
	}
	return &feedOwnerJSON{Feed: f.URL, Owner: u.Email, VerifiedBy: o.VerifiedBy, Since: &o.CreatedAt, Balance: &u.Balance,
		Readers: f.SubscriberCount, CreditsRanOutAt: o.LapsedAt}, nil
}

// cmdFeedOwnerSet makes --email the owner of --feed (an existing feed):
// the operator's act after verifying the publisher.
func cmdFeedOwnerSet(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "feed owner set")
	feedURL := fs.String("feed", "", "the feed's URL (a feed feedmail knows)")
	email := fs.String("email", "", "the publisher's email address (their account pays)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	raw, err := requiredFeedFlag(*feedURL)
	if err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	s, f, err := a.knownFeed(ctx, raw)
	if err != nil {
		return err
	}
	u, _, err := s.EnsureUser(ctx, addr)
	if err != nil {
		return err
	}
	o, err := s.SetFeedOwner(ctx, f.ID, u.ID, store.OwnerByOperator)
	if err != nil {
		return err
	}
	a.log.Info("feed owner set", "feed", f.ID, "owner", u.ID)
	return a.printJSON(feedOwnerJSON{Feed: f.URL, Owner: u.Email, VerifiedBy: o.VerifiedBy, Since: &o.CreatedAt,
		Balance: &u.Balance, Readers: f.SubscriberCount})
}

// cmdFeedOwnerClear ends owner payment of --feed.
func cmdFeedOwnerClear(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "feed owner clear")
	feedURL := fs.String("feed", "", "the feed's URL")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	raw, err := requiredFeedFlag(*feedURL)
	if err != nil {
		return err
	}
	s, f, err := a.knownFeed(ctx, raw)
	if err != nil {
		return err
	}
	cleared, err := s.ClearFeedOwner(ctx, f.ID)
	if err != nil {
		return err
	}
	a.log.Info("feed owner cleared", "feed", f.ID, "had_owner", cleared)
	return a.printJSON(feedOwnerJSON{Feed: f.URL, Readers: f.SubscriberCount, Cleared: &cleared})
}

// requiredFeedFlag checks a required --feed value.
func requiredFeedFlag(v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("%w: --feed is required", errUsage)
	}
	return feedURLArg(v)
}

// knownFeed opens the store and finds the feed with URL raw; an unknown
// feed is an error saying how to add it.
func (a *app) knownFeed(ctx context.Context, raw string) (*store.Store, *store.Feed, error) {
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	f, err := s.FeedByURL(ctx, raw)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fmt.Errorf("no feed with URL %s (`feedmail poll %s` adds and polls it)", raw, raw)
	}
	return s, f, err
}
