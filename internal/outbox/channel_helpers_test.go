package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/mailer"
)

// chanFixture is a fixture whose clock starts now (a Standard Webhooks
// verifier checks timestamps against the wall clock) and a subscriber
// whose subscription goes by a channel.
type chanFixture struct {
	*fixture
	u   *store.User
	sub *store.Subscription
	ob  *Outbox
}

// newChanFixture subscribes a reader with 10 credits by channel name to
// target, as Check made it (the stored target, with its secret).
func newChanFixture(t *testing.T, name string, target channel.Target) (*chanFixture, channel.Target) {
	t.Helper()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	fx := newFixtureOn(t, storetest.Open(t, storetest.Options{Clock: clk}), clk)
	u, sub := fx.user("reader@example.org", 10)
	if name != model.ChannelEmail {
		ch, ok := channels.All().Get(name)
		if !ok {
			t.Fatalf("channel %q is not registered", name)
		}
		var err error
		if target, err = ch.Check(target); err != nil {
			t.Fatalf("Check(%+v): %v", target, err)
		}
		if err := fx.s.SetSubscriptionChannel(context.Background(), u.ID, sub.ID,
			model.ChannelChoice{Channel: name, Target: target.URL, Secret: target.Secret}); err != nil {
			t.Fatal(err)
		}
	}
	md, err := mailer.NewMaildir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ob := fx.outbox(md, "w1", func(c *OutboxConfig) {
		c.Channels = channels.All()
		c.HTTP = fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, MaxRedirects: -1})
	})
	fx.push() // primes the feed: its first items are never delivered
	return &chanFixture{fixture: fx, u: u, sub: sub, ob: ob}, target
}

// push records a WebSub push of the feed with items (the new-post path
// of a poll: insert and fan out) and returns the outbox rows it queued.
func (fx *fixture) push(items ...store.NewItem) int {
	fx.t.Helper()
	fx.clk.Advance(time.Minute)
	now := fx.clk.Now()
	out, err := fx.s.RecordPoll(context.Background(), "", store.PollRecord{FeedID: fx.feed.ID, At: now, Outcome: "pushed",
		Status: 200, Push: true, Items: items, State: store.FeedState{PrimedAt: &now}})
	if err != nil {
		fx.t.Fatal(err)
	}
	return int(out.Emails)
}

// newPost is a post numbered n with a relative link, HTML and an enclosure.
func newPost(n int) store.NewItem {
	pub := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	return store.NewItem{Identity: fmt.Sprintf("post-%d", n), Link: fmt.Sprintf("/posts/%d", n),
		Title: fmt.Sprintf("Post number %d", n), Author: "Ann Author", PublishedAt: &pub,
		Content: fmt.Sprintf(`<p>Body of post %d with <b>bold</b>.</p><script>alert(1)</script>`, n),
		Media:   model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://blog.example.org/e.mp3", Type: "audio/mpeg", Length: 42}}}}
}

// rowsOf returns the outbox rows of the fixture's subscription.
func (fx *chanFixture) rowsOf() []store.OutboxRow {
	fx.t.Helper()
	var rows []store.OutboxRow
	if err := fx.s.DB.Where("subscription_id = ?", fx.sub.ID).Order("id").Find(&rows).Error; err != nil {
		fx.t.Fatal(err)
	}
	return rows
}
