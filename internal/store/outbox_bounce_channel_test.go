package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestBouncingHoldsOnlyEmail: the hard bounce that marks an address
// bouncing holds the person's queued paid email, and leaves the paid
// deliveries that go by another channel (a webhook, a chat) queued: they
// never go to that address.
func TestBouncingHoldsOnlyEmail(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	u := newUser(t, s, "dead@example.com", 10)
	failing := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
		State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	rows := claimAll(t, s, "w1", now)
	if len(rows) != 1 || rows[0].ID != failing {
		t.Fatalf("claimed %+v, want the failing email", rows)
	}
	later := now.Add(time.Minute)
	email := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:2", UserID: u.ID, Credits: 1,
		Channel: model.ChannelEmail, State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now})
	hook := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:2:2", UserID: u.ID, Credits: 1,
		Channel: "webhook", State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now})
	issue := addOutbox(t, s, store.OutboxRow{Kind: store.KindDigest, DedupeKey: "digest:7", UserID: u.ID, Credits: 2,
		Channel: "slack", State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now})
	res, err := s.FailOutbox(ctx, store.Failure{Owner: "w1", Row: &rows[0], Reason: "550 no such user",
		HardBounce: true, BounceLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NowBouncing || res.Held != 1 {
		t.Errorf("FailOutbox = %+v; want the address bouncing and 1 row held (the email)", res)
	}
	for id, want := range map[int64]string{email: store.OutboxHeld, hook: store.OutboxQueued, issue: store.OutboxQueued} {
		r, err := s.OutboxByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != want {
			t.Errorf("row %s by %s: %s (%q), want %s", r.DedupeKey, r.Channel, r.State, r.LastError, want)
		}
	}
}

// TestChannelDeliveryKeepsBounceCount: a delivery made by another channel
// than email says nothing of the person's address, so it leaves their
// count of hard bounces as it is; accepted email resets it.
func TestChannelDeliveryKeepsBounceCount(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	u := newUser(t, s, "half@example.com", 10)
	if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).UpdateColumn("hard_bounces", 2).Error; err != nil {
		t.Fatal(err)
	}
	hook := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:2:1", UserID: u.ID, Credits: 1,
		Channel: "webhook", State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	email := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
		Channel: model.ChannelEmail, State: store.OutboxQueued, NextAttemptAt: now.Add(time.Hour), CreatedAt: now})
	if rows := claimAll(t, s, "w1", now); len(rows) != 1 || rows[0].ID != hook {
		t.Fatalf("claimed %+v, want the webhook row", rows)
	}
	if n, err := s.MarkOutboxSent(ctx, "w1", []store.SentMark{{ID: hook, UserID: u.ID, MessageID: "feedmail-1", Channel: "webhook"}}); err != nil || n != 1 {
		t.Fatalf("MarkOutboxSent = %d, %v", n, err)
	}
	if got, _ := s.UserByID(ctx, u.ID); got.HardBounces != 2 {
		t.Errorf("hard_bounces %d after a webhook delivery, want 2 (kept)", got.HardBounces)
	}
	clk.Advance(time.Hour)
	if rows := claimAll(t, s, "w1", clk.Now()); len(rows) != 1 || rows[0].ID != email {
		t.Fatalf("claimed %+v, want the email row", rows)
	}
	if n, err := s.MarkOutboxSent(ctx, "w1", []store.SentMark{{ID: email, UserID: u.ID, MessageID: "<m@x>", Channel: model.ChannelEmail}}); err != nil || n != 1 {
		t.Fatalf("MarkOutboxSent = %d, %v", n, err)
	}
	if got, _ := s.UserByID(ctx, u.ID); got.HardBounces != 0 {
		t.Errorf("hard_bounces %d after accepted email, want 0", got.HardBounces)
	}
}
