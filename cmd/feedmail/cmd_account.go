package main

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// accountSubs returns the account subcommands, in the order help lists them.
func accountSubs() []subcommand {
	return append([]subcommand{
		{"status", "--email E", "JSON: an existing account's bounce counts, whether its deliveries are paused and why, and the latest reports about its mail", cmdAccountStatus},
		{"export", "--email E", "JSON: everything kept about an existing account (subscriptions with their consent, digests, ledger, purchases, mail reports)", cmdAccountExport},
		{"delete", "--email E", "erase an existing account: its address, subscriptions, digests and unsent mail (the ledger stays under a tombstone address)", cmdAccountDelete},
	}, tokenSubs()...)
}

// cmdAccount dispatches `feedmail account status|export|delete`: the person's
// data, as the account page's download and delete buttons give it; and
// `feedmail account token create|list|revoke` (cmd_token.go).
func cmdAccount(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, "account", args)
}

// cmdAccountExport prints everything kept about an existing account as
// JSON (model.AccountExport: subscriptions with how they were confirmed,
// digests, ledger, purchases, mail reports).
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

// accountStatusJSON is what `feedmail account status` prints: the
// address's delivery state and why.
type accountStatusJSON struct {
	Email         string            `json:"email"`
	Balance       int64             `json:"balance"`
	Deliveries    string            `json:"deliveries"` // "ok" or "paused: bouncing"
	HardBounces   int               `json:"hard_bounces_in_a_row"`
	BouncingSince *time.Time        `json:"bouncing_since,omitempty"`
	SoftBounces   int               `json:"soft_bounces"`
	LastBounce    string            `json:"last_bounce,omitempty"`
	LastBounceAt  *time.Time        `json:"last_bounce_at,omitempty"`
	Summary       string            `json:"summary,omitempty"`
	Reports       []reportEventJSON `json:"recent_reports"`
}

// reportEventJSON is one report that came back about the person's mail.
type reportEventJSON struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
	Severity string    `json:"severity,omitempty"`
	Status   string    `json:"status,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Email    int64     `json:"email"`
}

// cmdAccountStatus prints an existing account's delivery state: bounce
// counts, whether deliveries are paused and why, and the latest reports
// (bounces, complaints, unsubscribes by email) about its mail.
func cmdAccountStatus(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "account status", args)
	if err != nil {
		return err
	}
	evs, err := s.InboundEventsOf(ctx, u.ID, 20)
	if err != nil {
		return err
	}
	out := accountStatusJSON{Email: u.Email, Balance: u.Balance, Deliveries: "ok", HardBounces: u.HardBounces,
		BouncingSince: u.BouncingSince, SoftBounces: u.SoftBounces, LastBounce: u.LastBounce, LastBounceAt: u.LastBounceAt,
		Summary: store.BounceSummary(u), Reports: []reportEventJSON{}}
	if u.BouncingSince != nil {
		out.Deliveries = "paused: bouncing"
	}
	for _, e := range evs {
		out.Reports = append(out.Reports, reportEventJSON{At: e.ReceivedAt.UTC(), Kind: e.Kind, Severity: e.Severity,
			Status: e.Status, Detail: e.Detail, Email: e.OutboxID})
	}
	return a.printJSON(out)
}
