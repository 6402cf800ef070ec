package outbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/mailer"
)

// One person gets the feed by email and by webhook, two subscriptions: a
// post makes one email and one signed webhook delivery, each charged one
// credit; after the webhook subscription ends, the next post is one email
// and nothing more.
func TestFeedByEmailAndByWebhook(t *testing.T) {
	ctx := context.Background()
	rc := channeltest.Webhook(t)
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	fx := newFixtureOn(t, storetest.Open(t, storetest.Options{Clock: clk}), clk)
	u, mail := fx.user("reader@example.org", 10)
	choice, err := channels.Choose(webhook.Name, rc.URL()+"/hook", "", true)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := fx.s.SubscribeDelivery(ctx, u.ID, fx.feed.ID, choice, nil, store.ConfirmedByOperator)
	if err != nil {
		t.Fatal(err)
	}
	if !hook.Created || hook.ID == mail.ID {
		t.Fatalf("webhook delivery %+v: want a new subscription beside email subscription %d", hook, mail.ID)
	}
	dir := t.TempDir()
	md, err := mailer.NewMaildir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ob := fx.outbox(md, "w1", func(c *OutboxConfig) {
		c.Channels = channels.All()
		c.HTTP = fetcher.NewHTTPClient(fetcher.Config{AllowPrivate: true, MaxRedirects: -1})
	})
	fx.push() // primes the feed
	mails := func() int {
		es, err := os.ReadDir(filepath.Join(dir, "new"))
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}

	if n := fx.push(newPost(1)); n != 2 {
		t.Fatalf("the push queued %d deliveries, want 2 (email and webhook)", n)
	}
	fx.pass(ob)
	if got := mails(); got != 1 {
		t.Errorf("emails after post 1 = %d, want 1", got)
	}
	acc := rc.Accepted()
	if len(acc) != 1 {
		t.Fatalf("webhook deliveries after post 1 = %d, want 1", len(acc))
	}
	wh, err := standardwebhooks.NewWebhook(choice.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(acc[0].Body, acc[0].Header); err != nil {
		t.Errorf("the webhook delivery is not signed with its subscription's secret: %v", err)
	}
	if b := fx.balance(u); b != 8 {
		t.Errorf("balance after post 1 = %d, want 8 (one credit per delivery)", b)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 2 {
		t.Errorf("ledger charges after post 1 = %d, want 2: %v", e[store.LedgerCharge], e)
	}

	if _, err := fx.s.EndSubscription(ctx, hook.ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	if n := fx.push(newPost(2)); n != 1 {
		t.Fatalf("the push after the webhook ended queued %d deliveries, want 1 (email)", n)
	}
	fx.pass(ob)
	if got := mails(); got != 2 {
		t.Errorf("emails after post 2 = %d, want 2", got)
	}
	if got := len(rc.Accepted()); got != 1 {
		t.Errorf("webhook deliveries after post 2 = %d, want still 1", got)
	}
	if b := fx.balance(u); b != 7 {
		t.Errorf("balance after post 2 = %d, want 7", b)
	}
}
