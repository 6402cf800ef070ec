package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/dovecottest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
)

// TestInboundRole runs the inbound role against a real Dovecot holding
// hard and soft bounces, unsubscribes by email, an auto-reply, garbage and
// a forged bounce, and restarts Dovecot in the middle of the batch (after
// a message was handled, before it was moved). Every message ends in the
// done folder and every effect happens exactly once: one hard bounce and
// one refund per hard-bounced email, one soft bounce per soft one, one
// ended subscription per unsubscribe.
func TestInboundRole(t *testing.T) {
	srv := dovecottest.Start(t)
	dsn := storetest.FreshDSN(t, storetest.URL())
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123",
		"FEEDMAIL_BOUNCE_ADDRESS": "bounces@mail.example.com", "FEEDMAIL_LOG_LEVEL": "info",
		"FEEDMAIL_INBOUND_URL": srv.URL(true, "INBOX"), "FEEDMAIL_ROLES": "inbound"}
	var logs testutil.SyncBuffer
	a, err := newApp(environOf(env), io.Discard, &logs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx := context.Background()
	st, err := a.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := token.NewSigner([]byte(env["FEEDMAIL_SECRET"]))
	l := links.New("http://127.0.0.1:8080", signer, "feedmail@example.com").WithBounce("bounces@mail.example.com")
	feed, _, err := st.EnsureFeed(ctx, "https://blog.example.org/feed")
	if err != nil {
		t.Fatal(err)
	}
	const people = 24
	type person struct {
		user *store.User
		sub  *store.Subscription
		row  int64
	}
	var ps []person
	var msgs [][]byte
	for i := range people {
		u, _, err := st.EnsureUser(ctx, fmt.Sprintf("reader%d@example.net", i))
		if err != nil {
			t.Fatal(err)
		}
		sub, err := st.Subscribe(ctx, u.ID, feed.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("item:%d:1", sub.ID)
		row := store.OutboxRow{Kind: store.KindItem, DedupeKey: key, UserID: u.ID, SubscriptionID: &sub.ID, Address: u.Email,
			Credits: 1, State: store.OutboxSent, NextAttemptAt: time.Now(), CreatedAt: time.Now()}
		if err := st.DB.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, 5, "seed:"+u.Email, "seed"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -1, billing.KeyOutboxCharge(key), "charge"); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, person{u, sub, row.ID})
		switch i % 3 {
		case 0:
			msgs = append(msgs, []byte(inboundDSN(l.ReturnAddress(row.ID), u.Email, "5.1.1")))
		case 1:
			to := strings.TrimSuffix(strings.TrimPrefix(l.UnsubscribeMailto(row.ID), "mailto:"), "?subject=unsubscribe")
			msgs = append(msgs, []byte(fmt.Sprintf("From: %s\nTo: %s\nSubject: unsubscribe\nMessage-ID: <u%d@example.net>\n\nunsubscribe\n", u.Email, to, i)))
		case 2:
			msgs = append(msgs, []byte(inboundDSN(l.ReturnAddress(row.ID), u.Email, "4.2.2")))
		}
	}
	other, _ := token.NewSigner([]byte("another-install-secret-0123"))
	forged := links.New("http://x", other, "f@example.com").WithBounce("bounces@mail.example.com").ReturnAddress(ps[0].row)
	msgs = append(msgs,
		[]byte("From: reader1@example.net\nTo: bounces@mail.example.com\nSubject: Out of Office\nAuto-Submitted: auto-replied\n\nAway.\n"),
		[]byte("\x00\x01\x02 not a message at all \xff\xfe"),
		[]byte(inboundDSN(forged, ps[0].user.Email, "5.1.1")))
	// Every message twice over: the same DSN delivered again counts once.
	msgs = append(msgs, msgs[0], msgs[1])
	srv.Append(t, "INBOX", msgs...)

	handled := 0
	at, resume := make(chan struct{}), make(chan struct{})
	a.inboundTLS = srv.TLSConfig()
	a.afterInbound = func([]byte) {
		handled++
		if handled == 10 {
			close(at) // handled, not yet moved: the test restarts Dovecot now
			<-resume
		}
	}
	run, err := roleInbound(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(rctx) }()
	select {
	case <-at:
	case <-time.After(60 * time.Second):
		t.Fatal("the role never reached the tenth message")
	}
	srv.Restart(t)
	close(resume)
	testutil.Eventually(t, 90*time.Second, func() bool {
		return srv.Count(t, "INBOX") == 0 && srv.Count(t, "feedmail-done") == len(msgs)
	}, "every message handled and moved")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("role: %v", err)
	}
	for i, p := range ps {
		u, err := st.UserByID(ctx, p.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := st.SubscriptionByID(ctx, p.sub.ID)
		var refunds int64
		st.DB.Model(&store.LedgerEntry{}).Where("user_id = ? AND kind = ?", u.ID, store.LedgerRefund).Count(&refunds)
		var want string
		switch i % 3 {
		case 0:
			want = "hard 1 soft 0 refunds 1 active"
		case 1:
			want = "hard 0 soft 0 refunds 0 ended"
		case 2:
			want = "hard 0 soft 1 refunds 0 active"
		}
		if got := fmt.Sprintf("hard %d soft %d refunds %d %s", u.HardBounces, u.SoftBounces, refunds, sub.State); got != want {
			t.Errorf("person %d: %s, want %s", i, got, want)
		}
	}
	var events int64
	st.DB.Model(&store.InboundEvent{}).Count(&events)
	if events != people {
		t.Errorf("%d effects recorded, want %d", events, people)
	}
	if handled <= len(msgs) {
		t.Errorf("%d handlings of %d messages: the message handled at the restart should have come again", handled, len(msgs))
	}
	t.Logf("%d messages, %d handlings across a Dovecot restart, %d effects", len(msgs), handled, events)
	if strings.Contains(logs.String(), srv.Password) {
		t.Error("the mailbox password reached the logs")
	}
}
