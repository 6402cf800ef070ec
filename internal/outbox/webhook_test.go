package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// A new post reaches a webhook receiver once, signed so that the Standard
// Webhooks reference library verifies it, with the post's fields in the
// body; a tampered body and an old timestamp fail that verification; one
// credit is charged, as for an email.
func TestWebhookDeliversSignedPost(t *testing.T) {
	rc := channeltest.Webhook(t)
	fx, target := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
	if !strings.HasPrefix(target.Secret, webhook.SecretPrefix) {
		t.Fatalf("Check made secret %q, want a %s secret", target.Secret, webhook.SecretPrefix)
	}
	if n := fx.push(newPost(1)); n != 1 {
		t.Fatalf("the push queued %d deliveries, want 1", n)
	}
	fx.pass(fx.ob)
	got := rc.Accepted()
	if len(got) != 1 {
		t.Fatalf("receiver accepted %d requests, want 1 (all: %d)", len(got), len(rc.Requests()))
	}
	req := got[0]
	wh, err := standardwebhooks.NewWebhook(target.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(req.Body, req.Header); err != nil {
		t.Fatalf("reference verifier refused the delivery: %v", err)
	}
	tampered := bytes.Replace(req.Body, []byte("Post number 1"), []byte("Post number 2"), 1)
	if err := wh.Verify(tampered, req.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("tampered body: verify = %v, want no matching signature", err)
	}
	var body struct {
		Type string           `json:"type"`
		Data channel.PostJSON `json:"data"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	d := body.Data
	if body.Type != webhook.TypePost || d.Title != "Post number 1" || d.Link != "https://blog.example.org/posts/1" ||
		d.Author != "Ann Author" || d.Feed.Title != "Example Blog" || d.Published == nil || len(d.Enclosures) != 1 ||
		!strings.Contains(d.ContentHTML, "<b>bold</b>") || strings.Contains(d.ContentHTML, "script") ||
		!strings.Contains(d.ContentText, "Body of post 1") {
		t.Errorf("body = %s", req.Body)
	}
	rows := fx.rowsOf()
	if len(rows) != 1 || rows[0].State != store.OutboxSent || rows[0].Channel != webhook.Name ||
		rows[0].MessageID != req.Header.Get("webhook-id") {
		t.Fatalf("rows = %+v, want one sent webhook row whose message id is the webhook-id %q", rows, req.Header.Get("webhook-id"))
	}
	if b := fx.balance(fx.u); b != 9 {
		t.Errorf("balance = %d, want 9 (one credit per delivery)", b)
	}
	// An old timestamp, signed right, is refused by the verifier.
	old, err := webhook.New().Render(channel.Delivery{ID: "x", At: time.Now().Add(-10 * time.Minute), Target: target,
		Post: &channel.Post{Title: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(old.Body, old.Header); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Errorf("old timestamp: verify = %v, want too old", err)
	}
}

// A failing receiver gets the delivery again after the outbox's backoff,
// with the same webhook-id (its idempotency key); 404 or 410 ends the
// subscription, refunds the charge and emails the owner.
func TestWebhookRetriesThenGone(t *testing.T) {
	rc := channeltest.Webhook(t)
	fx, _ := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
	rc.Then(channeltest.Answer{Status: http.StatusServiceUnavailable, Header: map[string]string{"Retry-After": "600"}})
	fx.push(newPost(1))
	fx.pass(fx.ob)
	rows := fx.rowsOf()
	if len(rows) != 1 || rows[0].State != store.OutboxQueued || rows[0].Attempts != 1 ||
		rows[0].NextAttemptAt.Before(fx.clk.Now().Add(10*time.Minute)) {
		t.Fatalf("after a 503 with Retry-After 600: rows = %+v, want queued, 1 attempt, due in 10 min or more", rows)
	}
	if got := metricValue(t, fx.m.SendFailures.WithLabelValues(webhook.Name, "reply_5xx")); got != 1 {
		t.Errorf("feedmail_send_failures_total{channel=webhook,cause=reply_5xx} = %v after a 503, want 1", got)
	}
	fx.clk.Advance(11 * time.Minute)
	fx.pass(fx.ob)
	reqs := rc.Requests()
	if len(reqs) != 2 || len(rc.Accepted()) != 1 || reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
		t.Fatalf("requests = %d (accepted %d), want 2 with the same webhook-id", len(reqs), len(rc.Accepted()))
	}
	if b := fx.balance(fx.u); b != 9 {
		t.Errorf("balance = %d, want 9: one charge across retries", b)
	}

	rc.Then(channeltest.Answer{Status: http.StatusGone})
	fx.push(newPost(2))
	fx.pass(fx.ob) // the 410, and the owner's notice queued
	fx.pass(fx.ob) // the notice goes out
	rows = fx.rowsOf()
	if last := rows[len(rows)-1]; last.State != store.OutboxFailed || !strings.Contains(last.LastError, "gone") {
		t.Errorf("after a 410: row = %+v, want failed as gone", last)
	}
	sub, err := fx.s.SubscriptionByID(context.Background(), fx.sub.ID)
	if err != nil || sub.State != store.SubEnded {
		t.Errorf("subscription = %+v, %v; want ended", sub, err)
	}
	if b := fx.balance(fx.u); b != 9 {
		t.Errorf("balance = %d, want 9: the gone delivery refunded", b)
	}
	var notices []store.OutboxRow
	fx.s.DB.Where("user_id = ? AND kind = ?", fx.u.ID, store.KindNotice).Find(&notices)
	if len(notices) != 1 || notices[0].State != store.OutboxSent || !strings.Contains(notices[0].Payload, "Delivery to webhook stopped") {
		t.Errorf("notices = %+v, want one sent target-gone notice", notices)
	}
}
