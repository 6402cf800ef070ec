package outbox

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// gmailReceivingRate is Gmail's answer for one reader whose mailbox takes
// mail more slowly than it comes.
var gmailReceivingRate = &smtptest.Reply{Code: 450, Enhanced: "4.2.1",
	Message: "The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. Please resend your message at a later time."}

// TestOutboxRecipientRateIsTheReaders: the server answers one reader at a
// domain with Gmail's 450 4.2.1 "receiving mail at a rate". The other
// readers at that domain get their mail at once, in that pass and the
// next (the domain is not paused); the busy reader's email is retried with
// its own backoff, counted against nobody, and delivered once the limit
// passes: nothing lost, nothing twice, charged once each.
func TestOutboxRecipientRateIsTheReaders(t *testing.T) {
	const domain = "gmail.example"
	var lifted atomic.Bool
	srv := smtptest.StartT(t, smtptest.Options{RcptReply: func(rcpt string) *smtptest.Reply {
		if strings.EqualFold(rcpt, "busy@"+domain) && !lifted.Load() {
			return gmailReceivingRate
		}
		return nil
	}})
	fx, ctx := newFixture(t), context.Background()
	// One message per chunk: a domain pause after the first refusal would
	// put every later email back.
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1", func(c *OutboxConfig) { c.ChunkSize = 1 })
	var users []*store.User
	var subs []*store.Subscription
	var rows []*store.OutboxRow
	for _, addr := range []string{"busy@" + domain, "ann@" + domain, "bob@" + domain} {
		u, sub := fx.user(addr, 5)
		users, subs = append(users, u), append(subs, sub)
		rows = append(rows, fx.queueItem(u, sub))
	}
	busy := rows[0]

	if n := fx.pass(ob); n != 3 {
		t.Fatalf("claimed %d, want 3", n)
	}
	if got := srv.Stats(); got.Accepted != 2 || got.Refused != 1 {
		t.Fatalf("first pass: %d accepted, %d refused; want 2 and 1 (only the busy reader waits)", got.Accepted, got.Refused)
	}
	wantNext := fx.clk.Now().Add(RetryBase)
	if got := fx.row(busy.ID); got.State != store.OutboxQueued || got.Attempts != 1 || got.BlockedSince != nil ||
		!got.NextAttemptAt.Equal(wantNext) {
		t.Errorf("busy reader's row: %s attempts %d blocked_since %v next %v; want queued, 1 attempt, not blocked, next %v",
			got.State, got.Attempts, got.BlockedSince, got.NextAttemptAt, wantNext)
	}
	if d, err := fx.s.MailDestinations(ctx, []string{domain}); err != nil || len(d) != 0 {
		t.Errorf("destination paused for one reader's limit: %+v, %v", d, err)
	}
	if got := senderFailures(t, fx, bounce.RateLimited); got != 0 {
		t.Errorf("feedmail_mail_sender_failures_total{reason=rate-limited} = %v, want 0", got)
	}
	var ev store.MailEvent
	if err := fx.s.DB.Where("outbox_id = ?", busy.ID).Take(&ev).Error; err != nil ||
		ev.Reason != string(bounce.RecipientBusy) || ev.Party != string(bounce.PartyReader) || ev.Severity != "" || ev.Status != "4.2.1" {
		t.Errorf("mail event %+v, %v: want recipient-busy, reader, not counted, 4.2.1", ev, err)
	}

	// New mail to another reader at the domain goes out at once.
	rows = append(rows, fx.queueItem(users[1], subs[1]))
	if n := fx.pass(ob); n != 1 || srv.Stats().Accepted != 3 {
		t.Fatalf("second pass claimed %d, accepted %d in all; want 1 and 3", n, srv.Stats().Accepted)
	}

	// The busy reader's limit passes; the retry delivers.
	lifted.Store(true)
	fx.clk.Set(wantNext)
	if n := fx.pass(ob); n != 1 {
		t.Fatalf("retry pass claimed %d, want 1", n)
	}
	fx.deliveredOnce(srv, rows)
	fx.noReaderPaused(users)
	for _, u := range users {
		if e := fx.entries(u); e[store.LedgerRefund] != 0 || e[store.LedgerCharge] == 0 {
			t.Errorf("%s: ledger %v, want charges only", u.Email, e)
		}
	}
}
