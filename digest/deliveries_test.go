package digest_test

import (
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// TestTwoDeliveriesInOneDigest: a person whose email and webhook
// deliveries of one feed both go into the same digest gets each post once
// in its issue, and the issue costs what one feed costs.
func TestTwoDeliveriesInOneDigest(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("twice@example.com", "Morning", "daily", "UTC", 1)
	hook, err := e.st.SubscribeDelivery(e.ctx, p.user.ID, p.feeds[0].ID,
		model.ChannelChoice{Channel: "webhook", Target: "https://hooks.example/in", Secret: "whsec_x"}, &p.digest.ID, store.ConfirmedByAccount)
	if err != nil {
		t.Fatal(err)
	}
	it := p.queue(e, 0, "Once only", "<p>hi</p>", utc("2026-05-04T05:00:00Z"))
	di := store.DigestItem{DigestID: p.digest.ID, SubscriptionID: hook.ID, ItemID: it.ID, FeedID: it.FeedID, QueuedAt: e.clk.Now()}
	if err := e.st.DB.Create(&di).Error; err != nil {
		t.Fatal(err)
	}
	e.clk.Set(utc("2026-05-04T07:00:30Z"))
	e.assemble()
	is := e.issues(p.digest.ID)
	if len(is) != 1 || is[0].FeedCount != 1 {
		t.Fatalf("issues: %+v; want one issue of one feed", is)
	}
	c, err := e.st.DigestIssueContent(e.ctx, is[0].ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Feeds) != 1 || len(c.Feeds[0].Items) != 1 {
		t.Fatalf("issue content: %d feeds, items %+v; want the post once", len(c.Feeds), c.Feeds)
	}
}
