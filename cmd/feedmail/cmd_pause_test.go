package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestPauseCommands: pause and resume one subscription and the whole
// account; an unknown address, a feed the person does not get, an end in
// the past or unreadable is a one-line error that changes nothing.
func TestPauseCommands(t *testing.T) {
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
	must("subscribe", "--email", "a@example.com", "--feed", site+"/feed", "--confirmed")
	st := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	paused := func() (user, sub bool, until *time.Time) {
		t.Helper()
		u, err := st.UserByEmail(ctx, "a@example.com")
		if err != nil {
			t.Fatal(err)
		}
		views, err := st.SubscriptionsOfUser(ctx, u.ID)
		if err != nil || len(views) != 1 {
			t.Fatalf("subscriptions %v %v", views, err)
		}
		return u.PausedAt != nil, views[0].PausedAt != nil, views[0].PausedUntil
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pause", "--email", "nobody@example.com"}, "feedmail pause: no account for nobody@example.com"},
		{[]string{"resume", "--email", "nobody@example.com"}, "feedmail resume: no account for nobody@example.com"},
		{[]string{"pause", "--email", "a@example.com", "--feed", site + "/other"}, "feedmail pause: a@example.com is not subscribed to " + site + "/other"},
		{[]string{"pause", "--email", "a@example.com", "--until", "2020-01-01"}, `feedmail pause: usage: --until "2020-01-01": that is not in the future`},
		{[]string{"pause", "--email", "a@example.com", "--until", "soon"}, `feedmail pause: usage: --until "soon": use a date`},
	} {
		code, out, errs := cli(tc.args...)
		if code == 0 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") > 1 || !strings.HasPrefix(strings.TrimSpace(errs), tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want an error starting %q", tc.args, code, out, errs, tc.want)
		}
	}
	if u, s, _ := paused(); u || s {
		t.Fatal("bad input paused something")
	}

	out := must("pause", "--email", "a@example.com", "--feed", site+"/feed", "--until", "2w")
	if !strings.Contains(out, `"paused": true`) || !strings.Contains(out, `"until": "`) {
		t.Errorf("pause printed %s", out)
	}
	if u, s, until := paused(); u || !s || until == nil || time.Until(*until) < 13*24*time.Hour {
		t.Fatalf("after pausing the feed: account %v, feed %v until %v", u, s, until)
	}
	must("resume", "--email", "a@example.com", "--feed", site+"/feed")
	must("pause", "--email", "a@example.com")
	if u, s, _ := paused(); !u || s {
		t.Fatalf("after pausing the account: account %v, feed %v", u, s)
	}
	if out := must("resume", "--email", "a@example.com"); !strings.Contains(out, `"paused": false`) {
		t.Errorf("resume printed %s", out)
	}
	if u, s, _ := paused(); u || s {
		t.Fatal("still paused after resuming")
	}
}
