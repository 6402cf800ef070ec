package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestOwnerLapsePass: the mailer role's pass queues the notices of a
// lapse once (with the words of package notices), and after the notice
// period on the injected clock unsubscribes the readers and tells them.
func TestOwnerLapsePass(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123",
		"FEEDMAIL_LOG_LEVEL": "warn", "FEEDMAIL_BASE_URL": "https://feedmail.example"}
	a, err := newApp(environOf(env), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	clk := clock.NewFake(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
	a.clock = clk
	ctx := context.Background()
	st, err := a.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := st.EnsureFeed(ctx, "https://blog.example.org/feed")
	if err != nil {
		t.Fatal(err)
	}
	owner, _, err := st.EnsureUser(ctx, "pub@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFeedOwner(ctx, f.ID, owner.ID, store.OwnerByOperator); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"r1@example.org", "r2@example.org"} {
		u, _, err := st.EnsureUser(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Subscribe(ctx, u.ID, f.ID, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Minute)
	if err := st.DB.Model(&store.FeedOwner{}).Where("feed_id = ?", f.ID).
		Updates(map[string]any{"lapsed_at": clk.Now(), "lapse_seq": 1}).Error; err != nil {
		t.Fatal(err)
	}
	notices := func(prefix string) int64 {
		var n int64
		if err := st.DB.Model(&store.OutboxRow{}).Where("kind = ? AND dedupe_key LIKE ?", store.KindNotice, prefix+"%").
			Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 2 {
		if err := a.ownerLapsePass(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if r, o := notices("owner-lapse:"), notices("owner-out:"); r != 2 || o != 1 {
		t.Fatalf("after two passes: %d reader and %d owner notices, want 2 and 1", r, o)
	}
	clk.Advance(billing.OwnerNoticePeriod + time.Minute)
	if err := a.ownerLapsePass(ctx, st); err != nil {
		t.Fatal(err)
	}
	var active int64
	if err := st.DB.Model(&store.Subscription{}).Where("feed_id = ? AND state = ?", f.ID, store.SubActive).Count(&active).Error; err != nil {
		t.Fatal(err)
	}
	if active != 0 || notices("owner-ended:") != 2 {
		t.Fatalf("after the notice period: %d active, %d ended notices; want 0 and 2", active, notices("owner-ended:"))
	}
}
