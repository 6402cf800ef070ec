package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// The steps every per-person subcommand starts with: check --email, open
// the store, find (or create) the account, find a named digest.

// emailFlag checks a required --email value.
func emailFlag(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("%w: --email is required", errUsage)
	}
	if at := strings.LastIndexByte(v, '@'); at < 1 || at == len(v)-1 || strings.ContainsAny(v, " \t\r\n<>") {
		return "", fmt.Errorf("%w: --email %q is not an email address", errUsage, v)
	}
	return v, nil
}

// subscriberFlag checks the --email of a command that subscribes
// someone: emailFlag's check, and no address at an IP address (the web
// form's rule, mailaddr.IPDomain). Commands about an existing account
// take any address it has.
func subscriberFlag(v string) (string, error) {
	addr, err := emailFlag(v)
	if err == nil && mailaddr.IPDomain(addr) {
		return "", fmt.Errorf("%w: --email %q: %s", errUsage, addr, mailaddr.IPDomainMessage)
	}
	return addr, err
}

// ensureUser opens the store and returns the account of a checked
// address, creating it when missing.
func (a *app) ensureUser(ctx context.Context, addr string) (*store.User, error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	u, _, err := s.EnsureUser(ctx, addr)
	return u, err
}

// lookUpUser opens the store and returns the account of a checked address;
// an address without an account is an error (nothing is created, not even
// the database: openExistingStore).
func (a *app) lookUpUser(ctx context.Context, addr string) (*store.Store, *store.User, error) {
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	u, err := s.UserByEmail(ctx, addr)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fmt.Errorf("no account for %s", addr)
	}
	if err != nil {
		return nil, nil, err
	}
	return s, u, nil
}

// existingUser checks an --email flag and looks the account up (lookUpUser).
func (a *app) existingUser(ctx context.Context, email string) (*store.Store, *store.User, error) {
	addr, err := emailFlag(email)
	if err != nil {
		return nil, nil, err
	}
	return a.lookUpUser(ctx, addr)
}

// digestNamed returns u's digest called name (the store is open); a
// missing one is an error that says how to create it.
func (a *app) digestNamed(ctx context.Context, u *store.User, name string) (*store.Digest, error) {
	dg, err := a.store.DigestByName(ctx, u.ID, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, noDigestError(u.Email, name)
	}
	return dg, err
}

// noDigestError says that email has no digest name, and how to make one.
func noDigestError(email, name string) error {
	return fmt.Errorf("%s has no digest %q (create it with `feedmail digest set`)", email, name)
}

// subscribeService opens the store and returns the subscribe use cases as
// the command runs them (feeds fetched without the web's shorter timeout).
func (a *app) subscribeService(ctx context.Context) (*subscribe.Service, error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	p, err := a.newPoller(s, "cli", nil)
	if err != nil {
		return nil, err
	}
	return &subscribe.Service{Store: s, Links: a.links(), Clock: a.clock,
		Fetch:        fetcher.New(fetcher.Config{BaseURL: a.cfg.BaseURL, AllowPrivate: a.cfg.AllowPrivateNetworks}),
		Baseline:     p,
		TrialCredits: a.cfg.TrialCredits, Log: a.log}, nil
}

// personOnly parses a subcommand whose only flag is the --email of an
// existing account, and looks the account up.
func (a *app) personOnly(ctx context.Context, name string, args []string) (*store.Store, *store.User, error) {
	fs := flags(a, name)
	email := fs.String("email", "", "the person's email address")
	if err := parseNoArgs(fs, args); err != nil {
		return nil, nil, err
	}
	return a.existingUser(ctx, *email)
}

// oneFeedArg parses a subcommand that takes exactly one feed URL and no
// flags, and returns the checked URL.
func (a *app) oneFeedArg(name string, args []string) (string, error) {
	fs := flags(a, name)
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", fmt.Errorf("%w: give exactly one feed URL", errUsage)
	}
	return feedURLArg(fs.Arg(0))
}
