package outbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/mailer"
)

// orderTransport hands messages to tr and records their subjects in the
// order the outbox handed them over (the SMTP pool then sends a batch over
// several connections at once, so arrival order within a batch is not
// the outbox's to keep).
type orderTransport struct {
	mailer.Transport
	mu       sync.Mutex
	subjects []string
}

func (o *orderTransport) Send(ctx context.Context, msgs []*mail.Msg) []error {
	o.mu.Lock()
	for _, m := range msgs {
		o.subjects = append(o.subjects, m.GetGenHeader(mail.HeaderSubject)...)
	}
	o.mu.Unlock()
	return o.Transport.Send(ctx, msgs)
}

// TestHeldMailGoesOutOldestFirst: mail held while a person had no credits
// is handed over in the order it was queued once credits arrive, however
// small the worker's batch, and the person is told once that credits ran
// out, even when a first top-up pays for only part of what waits.
func TestHeldMailGoesOutOldestFirst(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	tr := &orderTransport{Transport: smtpTo(t, srv, "")}
	ob := fx.outbox(tr, "w1", func(c *OutboxConfig) { c.Batch = 2 })
	ctx := context.Background()
	u, sub := fx.user("broke@example.net", 0)
	for range 6 {
		fx.queueItem(u, sub)
		fx.clk.Advance(10 * time.Second)
		for fx.pass(ob) > 0 {
		}
	}
	if n := srv.Count(); n != 1 {
		t.Fatalf("%d emails while out of credits, want exactly one notice", n)
	}
	// A top-up that pays for half of it: the oldest half goes, the rest
	// waits, and no second "credits ran out" follows.
	if r, err := fx.s.PostLedgerEntry(ctx, u.ID, store.LedgerPurchase, 3, "purchase:held-order-1", "pack"); err != nil || r.Released != 3 {
		t.Fatalf("first top-up released %d (%v), want the 3 it pays for", r.Released, err)
	}
	for fx.pass(ob) > 0 {
	}
	if n := srv.Count(); n != 4 {
		t.Fatalf("%d emails after a top-up for 3, want the notice and 3 posts (no second notice)", n)
	}
	if _, err := fx.s.PostLedgerEntry(ctx, u.ID, store.LedgerPurchase, 3, "purchase:held-order-2", "pack"); err != nil {
		t.Fatal(err)
	}
	for fx.pass(ob) > 0 {
	}
	subjects := tr.subjects[1:]
	var want []string
	for i := 1; i <= 6; i++ {
		want = append(want, fmt.Sprintf("Post number %d", i))
	}
	if strings.Join(subjects, "|") != strings.Join(want, "|") {
		t.Fatalf("held mail went out as\n  %q\nwant oldest first\n  %q", subjects, want)
	}
}
