package poller_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/poller"
)

// TestPollsAreLoggedAtInfo: an operator at the default log level sees a
// line for a poll that failed (with why) and one for new posts (with what
// was queued), and none for a poll that found nothing new.
func TestPollsAreLoggedAtInfo(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := wkPoller(t, s, clk, "logs", func(c *poller.Config) { c.Log = log })
	ff := fm.AddFeed(farm.Spec{ItemCount: 2, ETag: farm.ETagStrong, Title: "Logged"})
	f := wkFollow(t, s, ff.URL(), 1, 0)
	poll := func() {
		t.Helper()
		clk.Advance(time.Hour)
		if _, err := p.PollFeed(ctx, f.ID, "manual"); err != nil {
			t.Fatal(err)
		}
	}
	poll() // first poll: nothing new
	poll() // 304
	if got := buf.String(); strings.Contains(got, "poll failed") || strings.Contains(got, "new posts") {
		t.Fatalf("quiet polls logged at info:\n%s", got)
	}
	ff.Publish()
	poll()
	if got := buf.String(); !strings.Contains(got, `msg="new posts"`) || !strings.Contains(got, "posts=1") || !strings.Contains(got, "emails=1") {
		t.Fatalf("no info line for the new post:\n%s", got)
	}
	ff.SetSpec(farm.Spec{Status: 500})
	poll()
	if got := buf.String(); !strings.Contains(got, `msg="poll failed"`) || !strings.Contains(got, "status=500") {
		t.Fatalf("no info line for the failed poll:\n%s", got)
	}
}
