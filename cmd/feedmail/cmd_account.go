package main

import (
	"context"

	"github.com/feedmail/feedmail/internal/store"
)

// accountUsage lists the account subcommands.
const accountUsage = "export --email E | delete --email E"

// cmdAccount dispatches `feedmail account export|delete`: the person's
// data, as the account page's download and delete buttons give it.
func cmdAccount(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, args, []subcommand{
		{"export", cmdAccountExport},
		{"delete", cmdAccountDelete},
	})
}

// cmdAccountExport prints everything kept about an existing account as
// JSON (store.AccountExport: subscriptions with how they were confirmed,
// digests, ledger, purchases).
func cmdAccountExport(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "account export", args)
	if err != nil {
		return err
	}
	ex, err := s.ExportAccount(ctx, u)
	if err != nil {
		return err
	}
	b, err := ex.JSON()
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

// accountDeletedJSON is what `feedmail account delete` prints.
type accountDeletedJSON struct {
	Email         string `json:"email"`
	Deleted       bool   `json:"deleted"`
	Subscriptions int    `json:"subscriptions"`
	Digests       int    `json:"digests"`
	PendingMail   int    `json:"pending_mail"`
	Feeds         int    `json:"feeds_recounted"`
	// KeptAs is the tombstone address the ledger and purchases stay under.
	KeptAs string `json:"ledger_kept_as"`
}

// cmdAccountDelete erases an existing account (store.DeleteUser): its
// address, subscriptions, digests and unsent mail; the ledger and
// purchases stay under a tombstone address.
func cmdAccountDelete(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "account delete", args)
	if err != nil {
		return err
	}
	del, err := s.DeleteUser(ctx, u.ID)
	if err != nil {
		return err
	}
	a.log.Info("account deleted", "user", u.ID, "subscriptions", del.Subscriptions, "digests", del.Digests,
		"pending_mail", del.PendingMail)
	return a.printJSON(accountDeletedJSON{Email: u.Email, Deleted: true, Subscriptions: del.Subscriptions,
		Digests: del.Digests, PendingMail: del.PendingMail, Feeds: len(del.Feeds), KeptAs: store.Tombstone(u.ID)})
}
