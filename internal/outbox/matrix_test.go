package outbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/matrix"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/dendritetest"
)

// A new post reaches a room of a real Matrix homeserver (Dendrite) once,
// as an m.notice with its title and link; the same delivery made again
// (a retry after a lost answer) is the same event, by its transaction id.
func TestMatrixToDendrite(t *testing.T) {
	hs := dendritetest.Start(t)
	fx, target := newChanFixture(t, matrix.Name, channel.Target{URL: hs.URL + "#" + hs.Room, Secret: hs.Token})
	if n := fx.push(newPost(1)); n != 1 {
		t.Fatalf("the push queued %d deliveries, want 1", n)
	}
	fx.pass(fx.ob)
	rows := fx.rowsOf()
	if len(rows) != 1 || rows[0].State != store.OutboxSent {
		t.Fatalf("rows = %+v, want one sent", rows)
	}
	ctx := context.Background()
	msgs, err := hs.WaitMessages(ctx, time.Minute, func(ms []dendritetest.Message) bool { return len(ms) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content.MsgType != "m.notice" || !strings.Contains(msgs[0].Content.Body, "Post number 1") ||
		!strings.Contains(msgs[0].Content.FormattedBody, `href="https://blog.example.org/posts/1"`) {
		t.Fatalf("room holds %+v, want one m.notice of post 1", msgs)
	}
	// The retry of a delivery whose answer was lost: same transaction id.
	d := channel.Delivery{ID: DeliveryID(&rows[0]), At: fx.clk.Now(), Target: target, Post: &channel.Post{Title: "Post number 1"}}
	req, err := matrix.New().Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := matrix.New().Deliver(ctx, fx.ob.cfg.HTTP, req); err != nil {
		t.Fatalf("the same delivery again: %v", err)
	}
	// A marker sent after it: once the room shows the marker it shows
	// everything sent before, and still one post.
	if err := hs.Send(ctx, "marker", "marker"); err != nil {
		t.Fatal(err)
	}
	again, err := hs.WaitMessages(ctx, time.Minute, func(ms []dendritetest.Message) bool {
		return len(ms) > 0 && ms[len(ms)-1].Content.Body == "marker"
	})
	if err != nil || len(again) != 2 {
		t.Errorf("after the same delivery again the room holds %d messages (%v), want the post once and the marker", len(again), err)
	}
}
