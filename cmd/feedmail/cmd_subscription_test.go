package main

import (
	"context"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestSubscriptionControlsCommands: subscribe takes filters and a format,
// `subscription set` changes only the flags given, and bad input is one
// line that changes nothing.
func TestSubscriptionControlsCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	must := func(args ...string) map[string]any {
		t.Helper()
		code, out, errs := cli(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return decodeJSON[map[string]any](t, out)
	}
	fails := func(wantErr string, args ...string) {
		t.Helper()
		code, out, errs := cli(args...)
		errs = strings.TrimSpace(errs)
		if code == 0 || out != "" || !strings.Contains(errs, wantErr) || strings.Count(errs, "\n") > 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a failure saying %q", args, code, out, errs, wantErr)
		}
	}
	fails(`unknown format "tiny"`, "subscribe", "--email", "new@example.com", "--feed", site+"/feed", "--format", "tiny")
	fails("invalid regular expression /(/: missing closing )", "subscribe", "--email", "new@example.com", "--feed", site+"/feed", "--include", "/(/")

	got := must("subscribe", "--email", "a@example.com", "--feed", site+"/feed", "--confirmed",
		"--include", "golang,, rust ,", "--format", "summary")
	if got["include"] != "golang, rust" || got["format"] != "summary" || got["exclude"] != nil {
		t.Errorf("subscribe printed %v", got)
	}
	fails("no account for nobody@example.com", "subscription", "set", "--email", "nobody@example.com", "--feed", site+"/feed", "--format", "title")
	fails("a@example.com has no subscription to "+site+"/other", "subscription", "set", "--email", "a@example.com", "--feed", site+"/other", "--format", "title")
	fails("invalid regular expression /[a/", "subscription", "set", "--email", "a@example.com", "--feed", site+"/feed", "--include", "", "--exclude", "/[a/")
	fails("unknown format", "subscription", "set", "--email", "a@example.com", "--feed", site+"/feed", "--include", "", "--format", "tiny")
	fails("give --include, --exclude or --format", "subscription", "set", "--email", "a@example.com", "--feed", site+"/feed")

	got = must("subscription", "set", "--email", "a@example.com", "--feed", site+"/feed", "--exclude", "sponsored")
	if got["include"] != "golang, rust" || got["exclude"] != "sponsored" || got["format"] != "summary" {
		t.Errorf("set --exclude printed %v, want the rest unchanged", got)
	}
	if got = must("subscription", "set", "--email", "a@example.com", "--feed", site+"/feed", "--format", "article"); got["format"] != "article" {
		t.Errorf("set --format article printed %v", got)
	}
	got = must("subscription", "set", "--email", "a@example.com", "--feed", site+"/feed", "--include", "", "--format", "TITLE")
	if got["include"] != "" || got["exclude"] != "sponsored" || got["format"] != "title" {
		t.Errorf("set --include '' --format TITLE printed %v", got)
	}

	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	if _, err := st.UserByEmail(ctx, "new@example.com"); err == nil {
		t.Error("a subscribe with bad settings created the account")
	}
	u, err := st.UserByEmail(ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := st.ExportAccount(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Subscriptions) != 1 || ex.Subscriptions[0].Include != "" || ex.Subscriptions[0].Exclude != "sponsored" ||
		ex.Subscriptions[0].Format != store.FormatTitle {
		t.Errorf("export subscriptions %+v", ex.Subscriptions)
	}
}
