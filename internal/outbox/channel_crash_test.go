package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
	"github.com/feedmail/feedmail/mailer"
)

// TestChannelCrashResendsOnlyWaitingMarks kills a worker delivering
// webhooks after the receiver answered 2xx and lets a successor take over
// once the lease runs out. Each delivery made is recorded as its 2xx
// comes, so only the marks still waiting for their commit (at most
// MaxUnmarked) are delivered twice — not every delivery of the pass, as
// when the pass recorded them all after its last reply.
func TestChannelCrashResendsOnlyWaitingMarks(t *testing.T) {
	const posts, maxUnmarked = 8, 2
	cases := []struct {
		step string
		at   int // "accepted": the delivery (1-based) the process dies after
	}{
		{step: "sent"},
		{step: "accepted", at: 3},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/at-%d", c.step, c.at), func(t *testing.T) {
			rc := channeltest.Webhook(t)
			fx, _ := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
			for i := range posts {
				fx.push(newPost(i + 1))
			}
			md, err := mailer.NewMaildir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			withChannels := func(cfg *OutboxConfig) {
				cfg.Channels = channels.All()
				cfg.HTTP = fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, MaxRedirects: -1})
				cfg.MaxUnmarked = maxUnmarked
			}
			a := fx.outbox(md, "dies", withChannels)
			var seen atomic.Int64
			a.crash = func(step string) bool {
				return step == c.step && (step != "accepted" || seen.Add(1) == int64(c.at))
			}
			if _, err := a.SendDue(context.Background()); !errors.Is(err, errCrashed) {
				t.Fatalf("dying pass: %v, want the crash", err)
			}
			fx.clk.Advance(5*time.Minute + time.Second)
			fx.pass(fx.outbox(md, "successor", withChannels))
			ids := map[string]int{}
			for _, r := range rc.Accepted() {
				ids[r.Header.Get("webhook-id")]++
			}
			if len(ids) != posts {
				t.Errorf("%d distinct deliveries arrived, want %d: %v", len(ids), posts, ids)
			}
			dups := duplicates(ids)
			t.Logf("crash after %q: %d delivered twice", c.step, dups)
			if dups > maxUnmarked {
				t.Errorf("%d deliveries made twice, want at most %d (the marks waiting)", dups, maxUnmarked)
			}
			var sent int64
			fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
			if sent != posts {
				t.Errorf("%d rows marked sent, want %d", sent, posts)
			}
		})
	}
}
