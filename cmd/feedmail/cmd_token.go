package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/store"
)

// tokenSubs returns the `feedmail account token …` subcommands: a
// person's tokens for the JSON API.
func tokenSubs() []subcommand {
	return []subcommand{
		{"token create", "--email E [--name N]", "make a JSON API token for an account (created if missing); JSON with the token, shown this once", cmdTokenCreate},
		{"token list", "--email E", "JSON: an existing account's API tokens (id, name, created, last used, revoked)", cmdTokenList},
		{"token revoke", "--id ID", "revoke an API token: it stops working at once", cmdTokenRevoke},
	}
}

// tokenJSON is a token as the commands print it (never its secret, except
// Token once at creation).
type tokenJSON struct {
	ID         int64      `json:"id"`
	Email      string     `json:"email,omitempty"`
	Name       string     `json:"name"`
	Token      string     `json:"token,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

func toTokenJSON(t *store.APIToken) tokenJSON {
	out := tokenJSON{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC(), LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
	if out.LastUsedAt != nil {
		u := out.LastUsedAt.UTC()
		out.LastUsedAt = &u
	}
	if out.RevokedAt != nil {
		u := out.RevokedAt.UTC()
		out.RevokedAt = &u
	}
	return out
}

// cmdTokenCreate makes a token for an account (api.IssueToken) and prints
// it once: only its hash is kept.
func cmdTokenCreate(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "account token create")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	name := fs.String("name", "", "a name to tell the token apart, e.g. \"laptop script\"")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	u, err := a.ensureUser(ctx, addr)
	if err != nil {
		return err
	}
	plain, t, err := api.IssueToken(ctx, a.store, u.ID, *name)
	if errors.Is(err, api.ErrBadTokenName) {
		return fmt.Errorf("%w: --name: %v", errUsage, err)
	}
	if err != nil {
		return err
	}
	a.log.Info("api token created", "user", u.ID, "token", t.ID)
	out := toTokenJSON(t)
	out.Email, out.Token = u.Email, plain
	return a.printJSON(out)
}

// cmdTokenList prints an existing account's tokens, oldest first.
func cmdTokenList(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "account token list", args)
	if err != nil {
		return err
	}
	ts, err := s.APITokensOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	out := struct {
		Email  string      `json:"email"`
		Tokens []tokenJSON `json:"tokens"`
	}{Email: u.Email, Tokens: []tokenJSON{}}
	for i := range ts {
		out.Tokens = append(out.Tokens, toTokenJSON(&ts[i]))
	}
	return a.printJSON(out)
}

// cmdTokenRevoke revokes a token by id (whoever's it is: the operator's
// command); revoking it again changes nothing.
func cmdTokenRevoke(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "account token revoke")
	idText := fs.String("id", "", "the token's id (as `feedmail account token list` prints it)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	id, err := strconv.ParseInt(*idText, 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("%w: --id is a token's id, a positive whole number", errUsage)
	}
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	t, err := s.RevokeAPIToken(ctx, 0, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no API token %d", id)
	}
	if err != nil {
		return err
	}
	a.log.Info("api token revoked", "user", t.UserID, "token", t.ID)
	return a.printJSON(toTokenJSON(t))
}
