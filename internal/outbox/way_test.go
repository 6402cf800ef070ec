package outbox

import (
	"context"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// wayOf sends email (named or not) by email and a registered channel by
// the channels; a channel this process does not register has no way.
func TestWayOf(t *testing.T) {
	fx := newFixture(t)
	with := fx.outbox(&captureTransport{t: t}, "w1", func(c *OutboxConfig) { c.Channels = channels.All() })
	without := fx.outbox(&captureTransport{t: t}, "w2")
	for _, tc := range []struct {
		o       *Outbox
		channel string
		want    string // "email", "channels" or "" for none
	}{
		{with, "", "email"},
		{with, model.ChannelEmail, "email"},
		{with, webhook.Name, "channels"},
		{with, "pigeon", ""},
		{without, "", "email"},
		{without, webhook.Name, ""},
	} {
		w, err := tc.o.wayOf(&store.OutboxRow{Channel: tc.channel})
		got := ""
		switch w.(type) {
		case *mailWay:
			got = "email"
		case *channelWay:
			got = "channels"
		}
		if got != tc.want || (w == nil) != (err != nil) {
			t.Errorf("wayOf(%q) = %T, %v; want %q", tc.channel, w, err, tc.want)
		}
	}
}

// A delivery by a channel this process does not know is retried (another
// process may know it): queued again with one attempt, nothing charged,
// nothing sent; a process that knows the channel delivers it.
func TestUnknownChannelIsRetried(t *testing.T) {
	rc := channeltest.Webhook(t)
	fx, _ := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
	fx.push(newPost(1))
	old := fx.outbox(&captureTransport{t: t}, "old")
	fx.pass(old)
	rows := fx.rowsOf()
	if len(rows) != 1 || rows[0].State != store.OutboxQueued || rows[0].Attempts != 1 ||
		!strings.Contains(rows[0].LastError, "no channel") {
		t.Fatalf("rows = %+v, want one queued row, 1 attempt, no channel in this process", rows)
	}
	if b := fx.balance(fx.u); b != 10 || len(rc.Requests()) != 0 {
		t.Fatalf("balance %d, %d requests; want 10 and none", b, len(rc.Requests()))
	}
	fx.clk.Advance(RetryCap)
	fx.pass(fx.ob)
	if rows := fx.rowsOf(); len(rc.Accepted()) != 1 || rows[0].State != store.OutboxSent {
		t.Fatalf("after a pass that knows webhooks: %d accepted, rows = %+v; want the delivery made", len(rc.Accepted()), rows)
	}
}

// A delivery by a channel says nothing of the person's email address: it
// leaves their count of hard bounces as it was.
func TestChannelDeliveryKeepsBounceCount(t *testing.T) {
	rc := channeltest.Webhook(t)
	fx, _ := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
	if err := fx.s.DB.Model(&store.User{}).Where("id = ?", fx.u.ID).UpdateColumn("hard_bounces", 2).Error; err != nil {
		t.Fatal(err)
	}
	fx.push(newPost(1))
	fx.pass(fx.ob)
	if rows := fx.rowsOf(); len(rc.Accepted()) != 1 || len(rows) != 1 || rows[0].State != store.OutboxSent {
		t.Fatalf("%d accepted, rows %+v; want the delivery made", len(rc.Accepted()), rows)
	}
	u, err := fx.s.UserByID(context.Background(), fx.u.ID)
	if err != nil || u.HardBounces != 2 {
		t.Errorf("hard_bounces %d (%v) after a webhook delivery, want 2", u.HardBounces, err)
	}
}
