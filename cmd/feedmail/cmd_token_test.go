package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestTokenCommands: create prints a token once (only its hash is
// stored), list shows it without the secret, revoke marks it, and bad
// input is a usage error that changes nothing.
func TestTokenCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	code, out, errs := cli("account", "token", "create", "--email", "a@example.com", "--name", "my script")
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, errs)
	}
	var made tokenJSON
	if err := json.Unmarshal([]byte(out), &made); err != nil {
		t.Fatalf("token create printed %q: %v", out, err)
	}
	if !strings.HasPrefix(made.Token, "fm_") || made.Name != "my script" || made.Email != "a@example.com" || made.ID == 0 {
		t.Fatalf("token create printed %+v", made)
	}
	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ts, err := st.APITokensOfUser(context.Background(), 1)
	if err != nil || len(ts) != 1 {
		t.Fatalf("stored tokens %v, err %v", ts, err)
	}
	if sum := sha256.Sum256([]byte(made.Token)); string(ts[0].TokenHash) != string(sum[:]) ||
		strings.Contains(ts[0].Key+string(ts[0].TokenHash), made.Token[20:]) {
		t.Errorf("stored %+v: want the token's SHA-256 and never its secret", ts[0])
	}

	_, out, _ = cli("account", "token", "list", "--email", "a@example.com")
	if strings.Contains(out, made.Token) || !strings.Contains(out, `"name": "my script"`) || strings.Contains(out, "revoked_at") {
		t.Errorf("token list printed %s", out)
	}
	if code, out, errs = cli("account", "token", "revoke", "--id", fmt.Sprint(made.ID)); code != 0 || !strings.Contains(out, "revoked_at") {
		t.Errorf("token revoke: exit %d, %s %s", code, out, errs)
	}
	if _, out, _ = cli("account", "token", "list", "--email", "a@example.com"); !strings.Contains(out, "revoked_at") {
		t.Errorf("token list after revoke: %s", out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"account", "token", "revoke", "--id", "x"}, 2, "--id is a token's id"},
		{[]string{"account", "token", "revoke", "--id", "99"}, 1, "no API token 99"},
		{[]string{"account", "token", "create", "--email", "nope"}, 2, "email"},
		{[]string{"account", "token", "create", "--email", "a@example.com", "--name", strings.Repeat("n", 61)}, 2, "--name"},
		{[]string{"account", "token", "list", "--email", "ghost@example.com"}, 1, "no account"},
		{[]string{"account", "token"}, 2, "unknown subcommand"},
	} {
		code, _, errs := cli(c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d mentioning %q", c.args, code, errs, c.code, c.want)
		}
	}
	if ts, _ := st.APITokensOfUser(context.Background(), 1); len(ts) != 1 {
		t.Errorf("%d tokens after the bad commands, want 1", len(ts))
	}
}
