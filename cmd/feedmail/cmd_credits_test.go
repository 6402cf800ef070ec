package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// cliFor runs the feedmail command in-process against dsn.
func cliFor(dsn string, extra map[string]string) func(args ...string) (int, string, string) {
	env := map[string]string{
		"FEEDMAIL_DATABASE_URL":  dsn,
		"FEEDMAIL_SECRET":        "0123456789abcdef0123",
		"FEEDMAIL_TRIAL_CREDITS": "50",
		"FEEDMAIL_LOG_LEVEL":     "warn",
	}
	for k, v := range extra {
		env[k] = v
	}
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, environOf(env), &out, &errb)
		return code, out.String(), errb.String()
	}
}

func TestCreditsCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)

	bad := []struct {
		name string
		args []string
		code int
	}{
		{"no subcommand", []string{"credits"}, 2},
		{"unknown subcommand", []string{"credits", "spend"}, 2},
		{"balance without email", []string{"credits", "balance"}, 2},
		{"balance of nobody", []string{"credits", "balance", "--email", "nobody@example.com"}, 1},
		{"grant zero", []string{"credits", "grant", "--email", "a@example.com", "--credits", "0", "--reason", "x"}, 2},
		{"grant negative", []string{"credits", "grant", "--email", "a@example.com", "--credits", "-5", "--reason", "x"}, 2},
		{"grant without reason", []string{"credits", "grant", "--email", "a@example.com", "--credits", "5"}, 2},
		{"grant to a non-address", []string{"credits", "grant", "--email", "not-an-address", "--credits", "5", "--reason", "x"}, 2},
		{"grant not a number", []string{"credits", "grant", "--email", "a@example.com", "--credits", "many", "--reason", "x"}, 2},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(c.args...)
			if code != c.code || out != "" || !strings.Contains(errs, "feedmail credits") {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q", code, c.code, out, errs)
			}
		})
	}

	// A grant creates the account and releases mail held for credits.
	code, out, errs := cli("credits", "grant", "--email", "Ann@Example.COM", "--credits", "5", "--reason", "welcome")
	if code != 0 {
		t.Fatalf("grant: %d %s", code, errs)
	}
	var g struct {
		Email, Kind, IdempotencyKey, Reason string
		Amount, BalanceAfter, Balance       int64
		Applied                             bool
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if g.Email != "Ann@example.com" || g.Kind != "grant" || g.Amount != 5 || g.Balance != 5 || !g.Applied || g.Reason != "welcome" {
		t.Errorf("grant output %+v", g)
	}
	s := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	u, err := s.UserByEmail(ctx, "Ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	held := store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Address: u.Email, Credits: 1,
		State: store.OutboxHeld, LastError: store.HoldCredits, NextAttemptAt: now, CreatedAt: now}
	if err := s.DB.Create(&held).Error; err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli("credits", "grant", "--email", "Ann@example.com", "--credits", "10", "--reason", "more", "--key", "ops-1")
	if code != 0 || !strings.Contains(out, `"released": 1`) || !strings.Contains(out, `"balance": 15`) {
		t.Fatalf("second grant: %d %s %s", code, out, errs)
	}
	if r, _ := s.OutboxByID(ctx, held.ID); r.State != store.OutboxQueued {
		t.Errorf("held mail after a grant: %s", r.State)
	}
	// The same --key again grants nothing.
	code, out, _ = cli("credits", "grant", "--email", "Ann@example.com", "--credits", "10", "--reason", "more", "--key", "ops-1")
	if code != 0 || !strings.Contains(out, `"applied": false`) {
		t.Errorf("replayed key: %d %s", code, out)
	}
	code, out, errs = cli("credits", "balance", "--email", "Ann@example.com")
	if code != 0 || out != "{\n  \"email\": \"Ann@example.com\",\n  \"balance\": 15\n}\n" {
		t.Errorf("balance: %d %q %s", code, out, errs)
	}
	code, out, _ = cli("credits", "ledger", "--email", "Ann@example.com", "--limit", "1")
	if code != 0 || !strings.Contains(out, `"idempotency_key": "ops-1"`) || strings.Contains(out, "welcome") {
		t.Errorf("ledger --limit 1: %d %s", code, out)
	}
}

func TestSubscribeCommand(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"no feed", []string{"subscribe", "--email", "a@example.com"}},
		{"feed not http", []string{"subscribe", "--email", "a@example.com", "--feed", "ftp://x.example/feed"}},
		{"relative feed", []string{"subscribe", "--email", "a@example.com", "--feed", "/feed.xml"}},
		{"no email", []string{"subscribe", "--feed", site + "/feed"}},
	} {
		if code, _, errs := cli(c.args...); code != 2 || !strings.Contains(errs, "usage") {
			t.Errorf("%s: exit %d, %s", c.name, code, errs)
		}
	}
	// The feed is checked as the web form checks it: nothing is recorded
	// for an address that is not a feed.
	for _, c := range []struct{ name, path, want string }{
		{"404", "/missing.xml", "answered 404 Not Found, not a feed"},
		{"page without feeds", "/nofeed.html", "that page has no feed"},
		{"page with two feeds", "/two", "advertises 2 feeds; pick one:\n  --feed " + site + "/feed  (Posts)\n  --feed " + site + "/other  (Comments)"},
	} {
		code, out, errs := cli("subscribe", "--email", "checked@example.com", "--feed", site+c.path)
		if code != 1 || out != "" || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 3 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 saying %q", c.name, code, out, errs, c.want)
		}
	}
	if code, _, errs := cli("subscribe", "--email", "a@example.com", "--feed", site+"/feed", "--digest", "Morning"); code != 1 ||
		!strings.Contains(errs, `no digest "Morning"`) {
		t.Errorf("unknown digest: %d %s", code, errs)
	}

	// A site's page leads to its one feed.
	code, out, errs := cli("subscribe", "--email", "pending@example.com", "--feed", site+"/site#top")
	if code != 0 || !strings.Contains(out, `"state": "pending"`) || !strings.Contains(out, `"confirmation_sent": true`) ||
		!strings.Contains(out, `"feed": "`+site+`/feed"`) || !strings.Contains(out, `"balance": 0`) {
		t.Fatalf("pending subscribe: %d %s %s", code, out, errs)
	}
	s := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	ctx := context.Background()
	p, _ := s.UserByEmail(ctx, "pending@example.com")
	var notices []store.OutboxRow
	s.DB.Where("user_id = ? AND kind = ?", p.ID, store.KindNotice).Find(&notices)
	if len(notices) != 1 || !strings.Contains(notices[0].Payload, "/confirm/") {
		t.Errorf("confirmation notices: %+v", notices)
	}

	code, out, errs = cli("subscribe", "--email", "ok@example.com", "--feed", site+"/feed", "--confirmed")
	if code != 0 || !strings.Contains(out, `"state": "active"`) || !strings.Contains(out, `"trial_credits": 50`) ||
		!strings.Contains(out, `"balance": 50`) {
		t.Fatalf("confirmed subscribe: %d %s %s", code, out, errs)
	}
	// A second confirmed subscription gives no second trial, and clears a
	// bouncing mark.
	u, _ := s.UserByEmail(ctx, "ok@example.com")
	if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).Updates(map[string]any{"hard_bounces": 3, "bouncing_since": time.Now().UTC()}).Error; err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli("subscribe", "--email", "ok@example.com", "--feed", site+"/y", "--confirmed")
	if code != 0 || strings.Contains(out, "trial_credits") || !strings.Contains(out, `"balance": 50`) {
		t.Errorf("second confirmed subscribe: %d %s", code, out)
	}
	u, _ = s.UserByEmail(ctx, "ok@example.com")
	if u.BouncingSince != nil || u.HardBounces != 0 {
		t.Errorf("bouncing mark not cleared: %v %d", u.BouncingSince, u.HardBounces)
	}
	if f, err := s.FeedByURL(ctx, site+"/feed"); err != nil || f.SubscriberCount != 1 || f.PrimedAt == nil {
		t.Errorf("feed (one active subscriber, primed by the command's fetch): %+v %v", f, err)
	}
}

// TestSubscribeNewest: --confirmed --newest queues the feed's newest post
// at once, one email; without --newest nothing is queued.
func TestSubscribeNewest(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	if code, _, errs := cli("subscribe", "--email", "plain@example.com", "--feed", site+"/feed", "--confirmed"); code != 0 {
		t.Fatalf("subscribe: %d %s", code, errs)
	}
	if code, _, errs := cli("subscribe", "--email", "newest@example.com", "--feed", site+"/feed", "--confirmed", "--newest"); code != 0 {
		t.Fatalf("subscribe --newest: %d %s", code, errs)
	}
	s := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	for addr, want := range map[string]int64{"plain@example.com": 0, "newest@example.com": 1} {
		u, err := s.UserByEmail(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := s.DB.Model(&store.OutboxRow{}).Where("user_id = ? AND kind = ?", u.ID, store.KindItem).Count(&n).Error; err != nil || n != want {
			t.Errorf("%s: %d item emails queued (%v), want %d", addr, n, err, want)
		}
	}
}
