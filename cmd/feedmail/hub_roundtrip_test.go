package main

import (
	"context"
	"net/http"
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

	_, st, f := serveSubscribedToHub(t, ff.URL(), func() bool { return hub.Counts().Subscriptions == 1 })
	count := func(model any, where string) int64 {
		var n int64
		if err := st.DB.Model(model).Where(where, f.ID).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	items, queued := count(&store.Item{}, "feed_id = ?"), count(&store.OutboxRow{}, "item_id IN (SELECT id FROM items WHERE feed_id = ?)")

	ff.Publish(farm.Item{ID: "pushed", Title: "Pushed", Published: time.Now()})
	if err := hubtest.Publish(context.Background(), http.DefaultClient, hub.URL(), ff.URL()); err != nil {
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
