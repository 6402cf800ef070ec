package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/hubtest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestServeWithRunningHub runs `feedmail serve` (web, poller) in-process
// against a farm feed advertising a hubtest hub that sends every push a
// second time after feedmail's 2xx (Resend 1): serve subscribes, the hub
// verifies through the live callback, a publish notification makes the
// hub fetch the feed and push it signed, and the post is recorded once
// with one email queued, although it arrived twice.
func TestServeWithRunningHub(t *testing.T) {
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	hub, err := hubtest.Start("127.0.0.1:0", hubtest.Options{Resend: 1, FirstBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Close() })
	ff := fm.AddFeed(farm.Spec{Format: farm.Atom, ItemCount: 2, Hub: hub.URL(), ETag: farm.ETagStrong})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "feedmail.db")
	env := map[string]string{
		"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_LISTEN": addr, "FEEDMAIL_BASE_URL": "http://" + addr,
		"FEEDMAIL_ROLES": "web,poller", "FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_SECRET": "0123456789abcdef0123456789abcdef", "FEEDMAIL_LOG_LEVEL": "warn", "FEEDMAIL_MAILDIR": t.TempDir(),
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"subscribe", "--email", "reader@example.com", "--feed", ff.URL(), "--confirmed"},
		environOf(env), &out, &errb); code != 0 {
		t.Fatalf("subscribe: exit %d: %s", code, errb.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() { done <- run(ctx, []string{"serve"}, environOf(env), io.Discard, &serveErr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveErr.String())
		}
	})
	testutil.Eventually(t, 30*time.Second, func() bool { return hub.Counts().Subscriptions == 1 },
		"the hub advertised by the feed gets a verified subscription")

	st, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f, err := st.FeedByURL(context.Background(), ff.URL())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		g, err := st.FeedByID(context.Background(), f.ID)
		return err == nil && store.WebSubActive(g, time.Now())
	}, "the feed's subscription is active")
	count := func(model any, where string) int64 {
		var n int64
		if err := st.DB.Model(model).Where(where, f.ID).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	items, queued := count(&store.Item{}, "feed_id = ?"), count(&store.OutboxRow{}, "item_id IN (SELECT id FROM items WHERE feed_id = ?)")

	ff.Publish(farm.Item{ID: "pushed", Title: "Pushed", Published: time.Now()})
	if err := hubtest.Publish(ctx, http.DefaultClient, hub.URL(), ff.URL()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { c := hub.Counts(); return c.Delivered == 1 && c.Resent == 1 },
		"the hub pushes the post, then again after the 2xx")
	if got := count(&store.Item{}, "feed_id = ?"); got != items+1 {
		t.Errorf("items %d after two pushes of one post, want %d", got, items+1)
	}
	if got := count(&store.OutboxRow{}, "item_id IN (SELECT id FROM items WHERE feed_id = ?)"); got != queued+1 {
		t.Errorf("emails queued %d after two pushes of one post, want %d", got, queued+1)
	}
}
