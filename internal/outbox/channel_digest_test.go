package outbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// A digest whose channel is a webhook: new posts wait for its slot, the
// digest worker makes the issue, and the outbox delivers the issue once,
// signed, charged at the issue's price like an email issue.
func TestDigestIssueByWebhook(t *testing.T) {
	rc := channeltest.Webhook(t)
	fx, _ := newChanFixture(t, model.ChannelEmail, channel.Target{})
	ctx := context.Background()
	sched, err := digest.ParseSchedule("daily", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	dg, err := fx.s.SetDigest(ctx, fx.u.ID, "Morning", sched)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.s.SetDigestChannel(ctx, fx.u.ID, dg.ID, model.ChannelChoice{Channel: webhook.Name, Target: rc.URL() + "/in", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.SetSubscriptionDelivery(ctx, fx.u.ID, fx.sub.ID, &dg.ID); err != nil {
		t.Fatal(err)
	}
	fx.push(newPost(1), newPost(2))
	w, err := digest.NewWorker(digest.Config{Store: fx.s, Owner: "d1", Clock: fx.clk})
	if err != nil {
		t.Fatal(err)
	}
	// Its slot of the last 24 hours is due now (the clock stays near the
	// wall clock, which the reference verifier checks timestamps against).
	if err := fx.s.DB.Model(&store.Digest{}).Where("id = ?", dg.ID).Update("next_slot_at", fx.clk.Now().Add(-25*time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	if n, err := w.AssembleDue(ctx); err != nil || n != 1 {
		t.Fatalf("AssembleDue = %d, %v; want one issue", n, err)
	}
	fx.pass(fx.ob)
	got := rc.Accepted()
	if len(got) != 1 {
		t.Fatalf("receiver accepted %d requests, want 1", len(got))
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(got[0].Body, got[0].Header); err != nil {
		t.Errorf("reference verifier: %v", err)
	}
	var body struct {
		Type string            `json:"type"`
		Data webhook.IssueData `json:"data"`
	}
	if err := json.Unmarshal(got[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != webhook.TypeIssue || body.Data.Digest != "Morning" || len(body.Data.Feeds) != 1 ||
		len(body.Data.Feeds[0].Posts) != 2 || body.Data.Feeds[0].Posts[0].ContentText == "" {
		t.Errorf("issue body = %s", got[0].Body)
	}
	var rows []store.OutboxRow
	fx.s.DB.Where("kind = ?", store.KindDigest).Find(&rows)
	if len(rows) != 1 || rows[0].Channel != webhook.Name || rows[0].State != store.OutboxSent {
		t.Fatalf("digest rows = %+v, want one sent by webhook", rows)
	}
	if b := fx.balance(fx.u); b != 10-int64(rows[0].Credits) || rows[0].Credits < 1 {
		t.Errorf("balance = %d with an issue of %d credits, want it charged", b, rows[0].Credits)
	}
}
