package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestAccountCommands: export prints the person's data with how each
// subscription was confirmed; delete erases the account, keeping the
// ledger; an unknown address is a one-line error that changes nothing.
func TestAccountCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	must := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	must("digest", "set", "--email", "a@example.com", "--name", "Morning", "--schedule", "daily", "--tz", "Europe/Berlin")
	must("subscribe", "--email", "a@example.com", "--feed", site+"/feed", "--digest", "Morning", "--confirmed")
	must("subscribe", "--email", "a@example.com", "--feed", site+"/other")
	must("subscribe", "--email", "b@example.com", "--feed", site+"/feed", "--confirmed")
	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	u, err := st.UserByEmail(ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	views, err := st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.State == store.SubPending {
			if _, err := st.ConfirmSubscription(ctx, v.ID, store.ConfirmedByLink); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, verb := range []string{"export", "delete"} {
		code, out, errs := cli("account", verb, "--email", "nobody@example.com")
		if code != 1 || out != "" || strings.TrimSpace(errs) != "feedmail account: no account for nobody@example.com" {
			t.Errorf("%s of an unknown address: exit %d, stdout %q, stderr %q; want exit 1 and one line", verb, code, out, errs)
		}
	}
	if code, _, errs := cli("account", "remove", "--email", "a@example.com"); code != 2 || !strings.Contains(errs, "export, delete") {
		t.Errorf("unknown verb: exit %d, %q", code, errs)
	}

	ex := decodeJSON[model.AccountExport](t, must("account", "export", "--email", "a@EXAMPLE.com"))
	if ex.Email != "a@example.com" || ex.Balance != 50 || len(ex.Ledger) != 1 || ex.Ledger[0].Kind != store.LedgerGrant {
		t.Errorf("export: %s balance %d ledger %+v, want a@example.com with the 50-credit trial", ex.Email, ex.Balance, ex.Ledger)
	}
	by := map[string]string{}
	for _, s := range ex.Subscriptions {
		by[strings.TrimPrefix(s.FeedURL, site)] = s.Delivery + ":" + s.Digest + " " + s.ConfirmedBy
	}
	if by["/feed"] != "digest:Morning operator" || by["/other"] != "instant: link" || len(by) != 2 {
		t.Errorf("export subscriptions %v, want /feed in Morning by the operator and /other by the link", by)
	}
	if len(ex.Digests) != 1 || ex.Digests[0].Timezone != "Europe/Berlin" || ex.Digests[0].Schedule != "0 7 * * *" {
		t.Errorf("export digests %+v", ex.Digests)
	}

	out := must("account", "delete", "--email", "a@example.com")
	var del accountDeletedJSON
	if err := json.Unmarshal([]byte(out), &del); err != nil {
		t.Fatalf("delete printed %q: %v", out, err)
	}
	if !del.Deleted || del.Subscriptions != 2 || del.Digests != 1 || del.KeptAs != store.Tombstone(u.ID) {
		t.Errorf("delete printed %+v", del)
	}
	if code, _, errs := cli("account", "export", "--email", "a@example.com"); code != 1 || !strings.Contains(errs, "no account for a@example.com") {
		t.Errorf("export after delete: exit %d, %q", code, errs)
	}
	feed, err := st.FeedByURL(ctx, site+"/feed")
	if err != nil {
		t.Fatal(err)
	}
	if feed.SubscriberCount != 1 {
		t.Errorf("feed has %d subscribers after the deletion, want 1 (b@example.com)", feed.SubscriberCount)
	}
	if entries, err := st.LedgerOf(ctx, u.ID, 0); err != nil || len(entries) != 1 {
		t.Errorf("ledger after delete: %d entries, err %v; want the trial grant kept", len(entries), err)
	}
}
