package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestBounceHoldRuleOnce: the SQL form of the bounce hold (bounce_hold.go)
// agrees with WaitsForBouncing, in the database, for every kind, channel
// and price of a row, to an address bouncing or not.
func TestBounceHoldRuleOnce(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	type shape struct {
		bouncing      bool
		kind, channel string
		credits       int
	}
	var shapes []shape
	for _, bouncing := range []bool{false, true} {
		for _, kind := range []string{store.KindItem, store.KindDigest, store.KindNotice} {
			for _, channel := range []string{model.ChannelEmail, "", "webhook", "slack"} {
				for _, credits := range []int{0, 1} {
					shapes = append(shapes, shape{bouncing, kind, channel, credits})
				}
			}
		}
	}
	users := map[bool]*store.User{false: newUser(t, s, "fine@example.com", 0), true: newUser(t, s, "dead@example.com", 0)}
	if err := s.DB.Model(&store.User{}).Where("id = ?", users[true].ID).Update("bouncing_since", now).Error; err != nil {
		t.Fatal(err)
	}
	ids := make(map[int64]shape, len(shapes))
	for i, sh := range shapes {
		id := addOutbox(t, s, store.OutboxRow{Kind: sh.kind, DedupeKey: fmt.Sprint("rule:", i), UserID: users[sh.bouncing].ID,
			Credits: sh.credits, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
		// Set the channel afterwards: an empty one would take the column's default.
		if err := s.DB.Exec("UPDATE outbox SET channel = ? WHERE id = ?", sh.channel, id).Error; err != nil {
			t.Fatal(err)
		}
		ids[id] = sh
	}
	var held []int64
	q := "SELECT o.id FROM outbox o JOIN users u ON u.id = o.user_id WHERE " +
		store.BounceHoldSQLForTest("o.kind", "o.channel", "u.bouncing_since")
	if err := s.DB.WithContext(ctx).Raw(q).Scan(&held).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	for id, sh := range ids {
		u, err := s.UserByID(ctx, users[sh.bouncing].ID)
		if err != nil {
			t.Fatal(err)
		}
		want := store.WaitsForBouncing(sh.kind, sh.channel, u.BouncingSince)
		if got := slices.Contains(held, id); got != want {
			t.Errorf("%+v: bounceHoldSQL says %v, WaitsForBouncing %v", sh, got, want)
		}
	}
	if len(held) != 2*2*2 {
		t.Errorf("%d rows wait, want 8 (items and digests by email, paid or free, to the bouncing address)", len(held))
	}
}

// TestBouncingHoldsFreeRows: the hard bounce that marks an address
// bouncing holds its queued email of posts whatever it costs (a post that
// came in a burst, a digest its feeds' owners pay for) like the paid
// ones, and leaves its notices queued: the confirmation that clears the
// mark must reach it.
func TestBouncingHoldsFreeRows(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	u := newUser(t, s, "dead@example.com", 10)
	addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
		State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	rows := claimAll(t, s, "w1", now)
	later := now.Add(time.Minute)
	want := map[int64]string{
		addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:2", UserID: u.ID, Credits: 1,
			State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now}): store.OutboxHeld,
		addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:3", UserID: u.ID, FreeReason: "burst: free",
			State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now}): store.OutboxHeld,
		addOutbox(t, s, store.OutboxRow{Kind: store.KindDigest, DedupeKey: "digest:4", UserID: u.ID,
			State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now}): store.OutboxHeld,
		addOutbox(t, s, store.OutboxRow{Kind: store.KindNotice, DedupeKey: "confirm:1", UserID: u.ID,
			State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now}): store.OutboxQueued,
	}
	res, err := s.FailOutbox(ctx, store.Failure{Owner: "w1", Row: &rows[0], Reason: "550 no such user",
		HardBounce: true, BounceLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NowBouncing || res.Held != 3 {
		t.Errorf("FailOutbox = %+v; want the address bouncing and 3 rows held (paid, burst, free digest)", res)
	}
	for id, state := range want {
		r, err := s.OutboxByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != state || (state == store.OutboxHeld && r.LastError != store.HoldBouncing) {
			t.Errorf("row %s (%d credits): %s %q, want %s", r.DedupeKey, r.Credits, r.State, r.LastError, state)
		}
	}
	if n, err := s.ClearBouncing(ctx, u.ID); err != nil || n != 3 {
		t.Errorf("ClearBouncing released %d, %v; want 3", n, err)
	}
}

// TestBounceHoldWrittenOnce: no other file of the store spells the bounce
// hold out again instead of calling bounceHoldSQL (bounce_hold.go).
func TestBounceHoldWrittenOnce(t *testing.T) {
	rule := regexp.MustCompile(`bouncing_since\s+IS\s+(NOT\s+)?NULL\s+(OR|THEN)|credits\s*>\s*0\s+AND\s+channel`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "bounce_hold.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := rule.FindIndex(src); loc != nil {
			t.Errorf("%s spells out the bounce hold (%q): use bounceHoldSQL", f, src[loc[0]:loc[1]])
		}
	}
}
