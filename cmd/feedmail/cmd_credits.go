package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// creditsSubs returns the credits subcommands, in the order help lists them.
func creditsSubs() []subcommand {
	return []subcommand{
		{"balance", "--email E", "JSON: an existing account's balance", cmdCreditsBalance},
		{"grant", "--email E --credits N --reason TEXT [--key K]", "add credits to an account (created if missing) and release the email held for want of them", cmdCreditsGrant},
		{"ledger", "--email E [--limit N] [--csv]", "JSON: an account's latest ledger entries, newest first; with --csv the whole ledger as CSV, oldest first", cmdCreditsLedger},
	}
}

// cmdCredits dispatches `feedmail credits balance|grant|ledger`.
func cmdCredits(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, "credits", args)
}

// creditsEntryJSON is a ledger entry as the commands print it for the
// operator: the line the API and the export give its owner
// (model.LedgerLine), with the account's address and the entry's
// idempotency key after it.
type creditsEntryJSON struct {
	model.LedgerLine
	Email          string `json:"email"`
	IdempotencyKey string `json:"idempotency_key"`
}

func toCreditsEntryJSON(email string, e store.LedgerEntry) creditsEntryJSON {
	return creditsEntryJSON{LedgerLine: e.Line(), Email: email, IdempotencyKey: e.IdempotencyKey}
}

// cmdCreditsBalance prints {"email":…,"balance":N}. It does not create an
// account: an address without one is an error.
func cmdCreditsBalance(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "credits balance")
	email := fs.String("email", "", "the person's email address")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	_, u, err := a.existingUser(ctx, *email)
	if err != nil {
		return err
	}
	return a.printJSON(struct {
		Email   string `json:"email"`
		Balance int64  `json:"balance"`
	}{u.Email, u.Balance})
}

// cmdCreditsGrant adds credits to an account (created when missing) and
// prints the ledger entry, the new balance and how many held emails it
// released. Each call grants anew unless --key repeats an earlier grant's
// key, which makes the call a no-op ("applied": false).
func cmdCreditsGrant(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "credits grant")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	credits := fs.Int64("credits", 0, "how many credits to add (≥ 1)")
	reason := fs.String("reason", "", "why, kept in the ledger")
	key := fs.String("key", "", "idempotency key (optional): a second grant with the same key does nothing")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	if *credits < 1 {
		return fmt.Errorf("%w: --credits must be a whole number ≥ 1, got %d", errUsage, *credits)
	}
	if strings.TrimSpace(*reason) == "" {
		return fmt.Errorf("%w: --reason is required", errUsage)
	}
	u, err := a.ensureUser(ctx, addr)
	if err != nil {
		return err
	}
	k := strings.TrimSpace(*key)
	if k == "" {
		k = billing.KeyAdminGrant(u.ID, a.clock.Now())
	}
	r, err := a.store.PostLedgerEntry(ctx, u.ID, store.LedgerGrant, *credits, k, strings.TrimSpace(*reason))
	if err != nil {
		return err
	}
	a.log.Info("credits granted", "email", u.Email, "credits", *credits, "applied", r.Applied, "released", r.Released)
	return a.printJSON(struct {
		creditsEntryJSON
		Balance  int64 `json:"balance"`
		Applied  bool  `json:"applied"`
		Released int64 `json:"released"`
	}{toCreditsEntryJSON(u.Email, r.Entry), r.Entry.BalanceAfter, r.Applied, r.Released})
}

// cmdCreditsLedger prints an account's latest entries, newest first.
func cmdCreditsLedger(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "credits ledger")
	email := fs.String("email", "", "the person's email address")
	limit := fs.Int("limit", 50, "most entries to show (0: all); not with --csv")
	asCSV := fs.Bool("csv", false, "print the whole ledger as CSV (time, kind, credits, balance_after, reason, reference), oldest first")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit must be ≥ 0", errUsage)
	}
	if *asCSV && flagSet(fs, "limit") {
		return fmt.Errorf("%w: --csv prints the whole ledger; leave out --limit", errUsage)
	}
	s, u, err := a.lookUpUser(ctx, addr)
	if err != nil {
		return err
	}
	if *asCSV {
		return writeLedgerCSV(ctx, s, u.ID, a.stdout)
	}
	es, err := s.LedgerOf(ctx, u.ID, *limit)
	if err != nil {
		return err
	}
	out := make([]creditsEntryJSON, len(es))
	for i, e := range es {
		out[i] = toCreditsEntryJSON(u.Email, e)
	}
	return a.printJSON(map[string]any{"email": u.Email, "balance": u.Balance, "entries": out})
}
