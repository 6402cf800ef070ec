package migrations_test

import (
	"context"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/migrations"
)

// Version 31 makes the unique key of subscriptions (user, feed, channel,
// target). On a database with data written before it, every subscription
// and what refers to it (digest items, owner-paid choices) is kept; then a
// second delivery of the same feed fits, the same delivery twice does not,
// and deleting the person still deletes their subscriptions and items
// (the foreign keys work again after SQLite's table rebuild).
func TestSubscriptionDeliveriesMigration(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, storetest.Options{NoMigrate: true})
	sqlDB, err := st.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	d := migrations.SQLite
	if st.Postgres() {
		d = migrations.Postgres
	}
	if v, err := migrations.UpTo(ctx, sqlDB, d, 30); err != nil || v >= 31 {
		t.Fatalf("migrate to 30: version %d, %v", v, err)
	}
	at := "2026-01-02 03:04:05"
	exec := func(q string, args ...any) {
		t.Helper()
		if err := st.DB.Exec(q, args...).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO users (id, email, created_at) VALUES (1, 'a@example.com', ?)`, at)
	exec(`INSERT INTO feeds (id, url, host, created_at, updated_at, next_poll_at) VALUES (1, 'https://example.com/feed', 'example.com', ?, ?, ?)`, at, at, at)
	exec(`INSERT INTO digests (id, user_id, name, schedule, next_slot_at, created_at) VALUES (1, 1, 'daily', '@daily', ?, ?)`, at, at)
	exec(`INSERT INTO subscriptions (id, user_id, feed_id, digest_id, state, created_at, format) VALUES (7, 1, 1, 1, 'active', ?, 'title')`, at)
	exec(`INSERT INTO items (id, feed_id, identity, seen_at) VALUES (1, 1, 'i1', ?)`, at)
	exec(`INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, queued_at) VALUES (1, 7, 1, 1, ?)`, at)
	exec(`INSERT INTO owner_paid_choices (subscription_id, feed_id, chosen_at) VALUES (7, 1, ?)`, at)

	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate past 31: %v", err)
	}
	count := func(q string) int64 {
		t.Helper()
		var n int64
		if err := st.DB.Raw(q).Scan(&n).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM subscriptions WHERE id = 7 AND format = 'title' AND digest_id = 1 AND channel = 'email'`); n != 1 {
		t.Fatal("the subscription did not survive the migration as it was")
	}
	if a, b := count(`SELECT COUNT(*) FROM digest_items`), count(`SELECT COUNT(*) FROM owner_paid_choices`); a != 1 || b != 1 {
		t.Fatalf("after the migration: %d digest items, %d owner-paid choices; want 1 and 1", a, b)
	}
	exec(`INSERT INTO subscriptions (user_id, feed_id, state, created_at, channel, target) VALUES (1, 1, 'active', ?, 'webhook', 'https://hooks.example/in')`, at)
	if err := st.DB.Exec(`INSERT INTO subscriptions (user_id, feed_id, state, created_at, channel, target) VALUES (1, 1, 'active', ?, 'webhook', 'https://hooks.example/in')`, at).Error; err == nil {
		t.Fatal("the same delivery twice was stored")
	}
	if err := st.DB.Exec(`INSERT INTO subscriptions (user_id, feed_id, state, created_at) VALUES (1, 1, 'active', ?)`, at).Error; err == nil {
		t.Fatal("a second email subscription to the same feed was stored")
	}
	exec(`DELETE FROM users WHERE id = 1`)
	if a, b := count(`SELECT COUNT(*) FROM subscriptions`), count(`SELECT COUNT(*) FROM digest_items`); a != 0 || b != 0 {
		t.Fatalf("after deleting the person: %d subscriptions, %d digest items; want none (cascade)", a, b)
	}
}
