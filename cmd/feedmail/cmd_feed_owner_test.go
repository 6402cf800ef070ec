package main

import (
	"context"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestFeedOwnerCommands: `feed owner set` makes the publisher (account
// created) pay for a known feed, `clear` ends it; bad command lines exit 2
// and an unknown feed exits 1.
func TestFeedOwnerCommands(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	if code, _, errs := cli("migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errs)
	}
	ctx := context.Background()
	s := storetest.OpenDSN(t, dsn, storetest.Options{NoMigrate: true})
	const feed = "https://blog.example/feed"
	f, _, err := s.EnsureFeed(ctx, feed)
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"feed", "owner"}, 2, "which one? set or clear"},
		{[]string{"feed", "owner", "set", "--email", "pub@example.com"}, 2, "--feed is required"},
		{[]string{"feed", "owner", "set", "--feed", feed}, 2, "--email is required"},
		{[]string{"feed", "owner", "set", "--feed", "ftp://x.example/f", "--email", "pub@example.com"}, 2, "not a web address"},
		{[]string{"feed", "owner", "clear", "--feed", feed, "extra"}, 2, "usage: feedmail feed owner"},
		{[]string{"feed", "owner", "set", "--feed", "https://unknown.example/feed", "--email", "pub@example.com"}, 1, "no feed with URL"},
		{[]string{"feed", "owner", "set", "--help"}, 0, ""},
	}
	for _, b := range bad {
		code, out, errs := cli(b.args...)
		if code != b.code || !strings.Contains(out+errs, b.says) {
			t.Errorf("feedmail %q: exit %d, stdout %q, stderr %q; want exit %d saying %q", b.args, code, out, errs, b.code, b.says)
		}
	}
	if code, out, _ := cli("feed", "owner", "set", "--help"); code != 0 || !strings.Contains(out, "usage: feedmail feed owner set --feed URL --email OWNER") {
		t.Errorf("help: exit %d %q", code, out)
	}

	code, out, errs := cli("feed", "owner", "set", "--feed", feed, "--email", "pub@example.com")
	if code != 0 || !strings.Contains(out, `"owner": "pub@example.com"`) || !strings.Contains(out, `"verified_by": "operator"`) {
		t.Fatalf("set: exit %d %s %s", code, out, errs)
	}
	o, err := s.FeedOwnerOf(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.UserByEmail(ctx, "pub@example.com")
	if err != nil || o.UserID != u.ID {
		t.Fatalf("owner %+v, user %+v %v", o, u, err)
	}
	if code, out, errs := cli("feed", "status", feed); code != 0 || !strings.Contains(out, `"owner": {`) ||
		!strings.Contains(out, `"owner": "pub@example.com"`) {
		t.Errorf("feed status of an owner-paid feed: exit %d %s %s", code, out, errs)
	}
	code, out, errs = cli("feed", "owner", "clear", "--feed", feed)
	if code != 0 || !strings.Contains(out, `"cleared": true`) {
		t.Fatalf("clear: exit %d %s %s", code, out, errs)
	}
	if _, err := s.FeedOwnerOf(ctx, f.ID); err == nil || !strings.Contains(err.Error(), store.ErrNotFound.Error()) {
		t.Errorf("owner after clear: %v, want not found", err)
	}
	if code, out, _ = cli("feed", "owner", "clear", "--feed", feed); code != 0 || !strings.Contains(out, `"cleared": false`) {
		t.Errorf("second clear: exit %d %s", code, out)
	}
	if code, out, _ = cli("feed", "status", feed); code != 0 || strings.Contains(out, `"owner"`) {
		t.Errorf("feed status after clear: exit %d %s", code, out)
	}
}
