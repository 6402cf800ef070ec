package faults

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestServeExportsQueueDepths runs the real `feedmail serve` with every
// role, lets it poll one feed, and scrapes its /metrics for the three
// queue depths metrics.go documents: due_feeds, outbox and held
// (feedmail_queue_depth{queue=…}).
//
// due_feeds is set by the poller role (cmd/feedmail rolePoller runs
// metrics.WatchQueues with store.CountDueFeeds every 15 s); outbox and
// held by the outbox worker of the mailer role (store.OutboxDepths).
//
// It scrapes them on FEEDMAIL_METRICS_LISTEN, and the public listener
// then answers /metrics with 404.
func TestServeExportsQueueDepths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the feedmail binary")
	}
	bin := proc.BuildT(t)
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	feed := fm.AddFeed(farm.Spec{Title: "Metrics feed", ItemCount: 2, ETag: farm.ETagStrong, LastModified: true})

	addr, metricsAddr := proc.FreeAddr(t), proc.FreeAddr(t)
	base := "http://" + addr
	env := proc.Env(map[string]string{
		"FEEDMAIL_DATABASE_URL":           storetest.FreshDSN(t, storetest.URL()),
		"FEEDMAIL_LISTEN":                 addr,
		"FEEDMAIL_BASE_URL":               base,
		"FEEDMAIL_FROM":                   "feedmail@example.com",
		"FEEDMAIL_SECRET":                 "faults-metrics-secret-0123456789",
		"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1",
		"FEEDMAIL_TRIAL_CREDITS":          "10",
		"FEEDMAIL_ROLES":                  "web,poller,mailer,digest",
		"FEEDMAIL_MAILDIR":                filepath.Join(t.TempDir(), "mail"),
		"FEEDMAIL_METRICS_LISTEN":         metricsAddr,
	})
	run := func(args ...string) { proc.Run(t, bin, env, args...) }
	run("migrate")
	run("subscribe", "--email", "reader@example.net", "--feed", feed.URL(), "--confirmed")

	p, err := proc.Start(bin, env, "serve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("feedmail serve log:\n%s", p.Log.String())
		}
	})
	// The signup's check was the feed's first poll, and the next is minutes
	// away: the publisher's ping makes serve poll it now.
	p.WaitHealthy(t, "feedmail serve", base, 60*time.Second)
	if resp, err := http.Post(base+"/ping?url="+url.QueryEscape(feed.URL()), "text/plain", nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	var got map[string]float64
	testutil.Eventually(t, 60*time.Second, func() bool {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got = parseExposition(t, string(b))
		polled := false
		for k := range got {
			polled = polled || strings.HasPrefix(k, "feedmail_polls_total{")
		}
		_, depths := got[`feedmail_queue_depth{queue="outbox"}`]
		return polled && depths
	}, "feedmail serve polls the feed and its mailer reports the outbox depth")
	if resp, err := http.Get(base + "/metrics"); err != nil {
		t.Errorf("/metrics on the public listener: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/metrics on the public listener: %d, want 404 with FEEDMAIL_METRICS_LISTEN set", resp.StatusCode)
		}
	}
	if got["feedmail_db_statements_total"] <= 0 {
		t.Errorf("feedmail_db_statements_total = %v, want > 0 after a poll", got["feedmail_db_statements_total"])
	}
	for _, q := range []string{"due_feeds", "outbox", "held"} {
		if _, ok := got[`feedmail_queue_depth{queue="`+q+`"}`]; !ok {
			t.Errorf(`feedmail_queue_depth{queue=%q} is not exported by feedmail serve`, q)
		}
	}
}
