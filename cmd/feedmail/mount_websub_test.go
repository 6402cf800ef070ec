package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/testkit/websubtest"
)

// TestServeWebSubAndPings runs `feedmail serve` with the web and poller
// roles in-process against a farm feed that advertises a fake hub: the
// poller's first poll finds the hub, the renewal loop subscribes, the hub's
// verification reaches the live callback, content the hub pushes lands in
// the items, and a ping makes the feed due. It checks the wiring of
// mountWebSub and the poller role, on real time (waits use Eventually).
func TestServeWebSubAndPings(t *testing.T) {
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	hub := websubtest.New(t, websubtest.Options{})
	ff := fm.AddFeed(farm.Spec{Format: farm.Atom, ItemCount: 2, Hub: hub.URL, ETag: farm.ETagStrong})

	addr, st, f := serveSubscribedToHub(t, ff.URL(), func() bool { return len(hub.Subscriptions()) == 1 })
	sub := hub.Subscriptions()[0]
	if sub.Topic != ff.URL() || !strings.HasPrefix(sub.Callback, "http://"+addr+"/websub/") || len(sub.Secret) != 64 {
		t.Fatalf("subscription %+v", sub)
	}

	items := func() int64 {
		var n int64
		if err := st.DB.Model(&store.Item{}).Where("feed_id = ?", f.ID).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := items()
	ff.Publish(farm.Item{ID: "pushed", Title: "Pushed", Published: time.Now()})
	ds := hub.Publish(context.Background(), sub.Topic, ff.Body(), "application/atom+xml", websubtest.Signing{Method: "sha512"})
	if len(ds) != 1 || ds[0].Status != http.StatusAccepted {
		t.Fatalf("deliveries %+v", ds)
	}
	if n := items(); n != before+1 {
		t.Errorf("items %d after the push, want %d", n, before+1)
	}

	resp, err := http.Get("http://" + addr + "/ping?url=" + url.QueryEscape(ff.URL()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "poll scheduled now") {
		t.Errorf("ping: %d %q", resp.StatusCode, body)
	}
}

// serveSubscribedToHub subscribes a reader to feedURL (a farm feed that
// advertises a hub) and runs `feedmail serve` with the web and poller
// roles in-process on a fresh SQLite database, stopped at cleanup. Once
// hubSubscribed reports the hub's verified subscription and the feed's
// subscription is active, it returns serve's address, a store on the same
// database and the feed, ready for a push through the hub.
func serveSubscribedToHub(t *testing.T, feedURL string, hubSubscribed func() bool) (string, *store.Store, *store.Feed) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "feedmail.db")
	env := map[string]string{
		"FEEDMAIL_DATABASE_URL":           dsn,
		"FEEDMAIL_LISTEN":                 addr,
		"FEEDMAIL_BASE_URL":               "http://" + addr,
		"FEEDMAIL_ROLES":                  "web,poller",
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_SECRET":                 "0123456789abcdef0123456789abcdef",
		"FEEDMAIL_LOG_LEVEL":              "warn",
		"FEEDMAIL_MAILDIR":                t.TempDir(),
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"subscribe", "--email", "reader@example.com", "--feed", feedURL, "--confirmed"},
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
	testutil.Eventually(t, 30*time.Second, hubSubscribed, "the hub advertised by the feed gets a verified subscription")

	st, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f, err := st.FeedByURL(context.Background(), feedURL)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		g, err := st.FeedByID(context.Background(), f.ID)
		return err == nil && store.WebSubActive(g, time.Now())
	}, "the feed's subscription is active")
	return addr, st, f
}
