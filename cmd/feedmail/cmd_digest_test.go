package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestDigestCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)

	bad := []struct {
		name, want string
		args       []string
	}{
		{"no subcommand", "set, list or delete", []string{"digest"}},
		{"unknown subcommand", "set, list or delete", []string{"digest", "remove"}},
		{"no email", "--email", []string{"digest", "set", "--name", "Morning", "--schedule", "daily"}},
		{"no name", "--name", []string{"digest", "set", "--email", "a@example.com", "--schedule", "daily"}},
		{"no schedule", "--schedule is required", []string{"digest", "set", "--email", "a@example.com", "--name", "Morning"}},
		{"bad spec", `--schedule "every morning": not a schedule feedmail understands: use words like`, []string{"digest", "set", "--email", "a@example.com", "--name", "Morning", "--schedule", "every morning"}},
		{"too fast", "at least 10s", []string{"digest", "set", "--email", "a@example.com", "--name", "Morning", "--schedule", "@every 1s"}},
		{"unknown zone", "--tz: unknown time zone", []string{"digest", "set", "--email", "a@example.com", "--name", "Morning", "--schedule", "daily", "--tz", "Europe/Atlantis"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(c.args...)
			if code != 2 || out != "" || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errs, c.want)
			}
		})
	}
	// Bad input created no account.
	if code, _, _ := cli("digest", "list", "--email", "a@example.com"); code != 1 {
		t.Fatalf("bad input created the account (list exit %d)", code)
	}

	code, out, errs := cli("digest", "set", "--email", "a@example.com", "--name", "Morning", "--schedule", "daily", "--tz", "Europe/Berlin")
	if code != 0 {
		t.Fatalf("set: exit %d: %s", code, errs)
	}
	var d digestJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("set output %q: %v", out, err)
	}
	loc, _ := time.LoadLocation("Europe/Berlin")
	local := d.NextSlotAt.In(loc)
	if d.Email != "a@example.com" || d.Name != "Morning" || d.Schedule != "0 7 * * *" || d.Timezone != "Europe/Berlin" ||
		local.Hour() != 7 || local.Minute() != 0 || !d.NextSlotAt.After(time.Now()) || d.NextSlotLocal != local.Format(time.RFC3339) {
		t.Fatalf("set printed %+v", d)
	}

	// Changing it: same digest, the zone kept when --tz is left out.
	code, out, errs = cli("digest", "set", "--email", "a@example.com", "--name", "morning", "--schedule", "@every 10s")
	if code != 0 {
		t.Fatalf("change: exit %d: %s", code, errs)
	}
	var d2 digestJSON
	if err := json.Unmarshal([]byte(out), &d2); err != nil {
		t.Fatal(err)
	}
	if d2.ID != d.ID || d2.Schedule != "@every 10s" || d2.Timezone != "Europe/Berlin" || time.Until(d2.NextSlotAt) > 11*time.Second {
		t.Fatalf("change printed %+v", d2)
	}

	// subscribe --digest resolves the digest by name; an unknown name is an error.
	if code, _, errs := cli("subscribe", "--email", "a@example.com", "--feed", site+"/feed", "--digest", "MORNING", "--confirmed"); code != 0 {
		t.Fatalf("subscribe --digest: exit %d: %s", code, errs)
	}
	if code, _, errs := cli("subscribe", "--email", "a@example.com", "--feed", site+"/other", "--digest", "Evening"); code == 0 || !strings.Contains(errs, `no digest "Evening"`) {
		t.Fatalf("subscribe to an unknown digest: exit %d: %s", code, errs)
	}
	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	u, err := st.UserByEmail(context.Background(), "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	subs, err := st.SubscriptionsOfUser(context.Background(), u.ID)
	if err != nil || len(subs) != 1 || subs[0].DigestID == nil || *subs[0].DigestID != d.ID || subs[0].State != store.SubActive {
		t.Fatalf("subscriptions %+v, %v", subs, err)
	}

	code, out, _ = cli("digest", "list", "--email", "a@example.com")
	if code != 0 || !strings.Contains(out, `"name": "morning"`) {
		t.Fatalf("list: exit %d: %s", code, out)
	}
}

// TestDigestDeleteCommand: a digest with feeds is deleted only with
// --feeds, and its feeds then come one post per email.
func TestDigestDeleteCommand(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	if code, _, errs := cli("digest", "set", "--email", "d@example.com", "--name", "Evening", "--schedule", "daily at 19:00"); code != 0 {
		t.Fatalf("digest set: %d %s", code, errs)
	}
	if code, _, errs := cli("subscribe", "--email", "d@example.com", "--feed", site+"/feed", "--digest", "Evening", "--confirmed"); code != 0 {
		t.Fatalf("subscribe: %d %s", code, errs)
	}
	if code, _, errs := cli("digest", "delete", "--email", "d@example.com", "--name", "Evening"); code != 2 || !strings.Contains(errs, "--feeds instant") {
		t.Fatalf("delete without --feeds: %d %s", code, errs)
	}
	code, out, errs := cli("digest", "delete", "--email", "d@example.com", "--name", "evening", "--feeds", "instant")
	if code != 0 || !strings.Contains(out, `"deleted": "Evening"`) || !strings.Contains(out, `"feeds": 1`) {
		t.Fatalf("delete: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli("digest", "delete", "--email", "d@example.com", "--name", "Evening", "--feeds", "instant"); code != 1 || !strings.Contains(errs, `no digest "Evening"`) {
		t.Fatalf("delete again: %d %s", code, errs)
	}
}
