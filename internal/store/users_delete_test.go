package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// accountFixture is a person with two feeds (one instant, one in a digest),
// a pending subscription, credits, a purchase, and mail in every state; and
// a neighbour on the same feed whose data must survive the deletion.
type accountFixture struct {
	s                *store.Store
	u, other         *store.User
	instant, digestd *store.Feed
	digest           *store.Digest
	sent, otherMail  int64
}

func newAccountFixture(t *testing.T, clk *clock.Fake) *accountFixture {
	t.Helper()
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fx := &accountFixture{s: s}
	fx.u = newUser(t, s, "Reader@Example.com", 10)
	fx.other = newUser(t, s, "other@example.com", 0)
	var err error
	if fx.instant, _, err = s.EnsureFeed(ctx, "https://a.example/feed"); err != nil {
		t.Fatal(err)
	}
	if fx.digestd, _, err = s.EnsureFeed(ctx, "https://b.example/feed"); err != nil {
		t.Fatal(err)
	}
	pending, _, err := s.EnsureFeed(ctx, "https://c.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	fx.digest = &store.Digest{UserID: fx.u.ID, Name: "Morning", Schedule: "0 7 * * *", Timezone: "Europe/Berlin",
		NextSlotAt: clk.Now().Add(time.Hour), CreatedAt: clk.Now()}
	if err := s.DB.Create(fx.digest).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubscribeConfirmedBy(ctx, fx.u.ID, fx.instant.ID, nil, store.ConfirmedByOperator); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubscribeConfirmedBy(ctx, fx.u.ID, fx.digestd.ID, &fx.digest.ID, store.ConfirmedByAccount); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, fx.u.ID, pending.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := s.ConfirmSubscription(ctx, sub.ID, store.ConfirmedByLink); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(ctx, fx.other.ID, fx.instant.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePurchase(ctx, fx.u.ID, 100, 500, "EUR", "cs_test_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettlePurchase(ctx, store.PaymentEventInput{EventID: "evt_1", Type: "checkout.session.completed",
		SessionID: "cs_test_1", Grant: true, LedgerKey: "purchase:cs_test_1"}); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	for i, st := range []string{store.OutboxQueued, store.OutboxHeld, store.OutboxSent} {
		id := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "mail:" + st, UserID: fx.u.ID,
			Address: fx.u.Email, State: st, Payload: `{"to":"` + fx.u.Email + `"}`, NextAttemptAt: now,
			CreatedAt: now.Add(time.Duration(i) * time.Second)})
		if st == store.OutboxSent {
			fx.sent = id
		}
	}
	fx.otherMail = addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "mail:other", UserID: fx.other.ID,
		Address: fx.other.Email, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	return fx
}

// TestExportAccount: the export holds every subscription with how it was
// confirmed, the digest, the whole ledger and the purchase, and nothing of
// the neighbour's; the digest's channel with its target, not its secret.
func TestExportAccount(t *testing.T) {
	clk := clock.NewFake(pollT0)
	fx := newAccountFixture(t, clk)
	ctx := context.Background()
	hook := model.ChannelChoice{Channel: "webhook", Target: "https://hooks.example.org/morning", Secret: "whsec_morningsecret"}
	if err := fx.s.SetDigestChannel(ctx, fx.u.ID, fx.digest.ID, hook); err != nil {
		t.Fatal(err)
	}
	u, err := fx.s.UserByID(ctx, fx.u.ID)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := fx.s.ExportAccount(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Email != "Reader@example.com" || ex.Balance != 110 {
		t.Errorf("export email %q balance %d, want Reader@example.com 110", ex.Email, ex.Balance)
	}
	got := map[string]string{}
	for _, sub := range ex.Subscriptions {
		got[sub.FeedURL] = sub.State + " " + sub.Delivery + ":" + sub.Digest + " by " + sub.ConfirmedBy
		if sub.ConfirmedAt == nil || sub.RequestedAt == nil {
			t.Errorf("%s: confirmed_at %v requested_at %v, want both", sub.FeedURL, sub.ConfirmedAt, sub.RequestedAt)
		}
	}
	want := map[string]string{
		"https://a.example/feed": "active instant: by operator",
		"https://b.example/feed": "active digest:Morning by account",
		"https://c.example/feed": "active instant: by link",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("subscription %s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("subscriptions %v, want %d", got, len(want))
	}
	if len(ex.Digests) != 1 || ex.Digests[0].Name != "Morning" || ex.Digests[0].Timezone != "Europe/Berlin" {
		t.Errorf("digests %+v, want Morning in Europe/Berlin", ex.Digests)
	} else if want := (model.ExportChannel{Name: "webhook", Target: hook.Target, SecretSet: true}); ex.Digests[0].Channel != want {
		t.Errorf("digest channel %+v, want %+v", ex.Digests[0].Channel, want)
	}
	if len(ex.Ledger) != 2 || ex.Ledger[0].Amount != 10 || ex.Ledger[1].Kind != store.LedgerPurchase || ex.Ledger[1].BalanceAfter != 110 {
		t.Errorf("ledger %+v, want the seed grant then the purchase", ex.Ledger)
	}
	if len(ex.Purchases) != 1 || ex.Purchases[0].State != store.PurchasePaid || ex.Purchases[0].Currency != "eur" {
		t.Errorf("purchases %+v, want one paid in eur", ex.Purchases)
	}
	b, err := ex.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "other@example.com") || strings.Contains(string(b), hook.Secret) || !strings.Contains(string(b), `"confirmed_by": "link"`) {
		t.Errorf("export JSON leaks the neighbour or the digest's secret, or lacks confirmed_by:\n%s", b)
	}
}

// TestDeleteUser: deleting an account erases the address, subscriptions,
// digests and pending mail, recounts the feeds, keeps the ledger and
// purchases (balanced, on the tombstone), keeps sent mail without the
// address, leaves the neighbour alone, and lets the address sign up anew.
func TestDeleteUser(t *testing.T) {
	clk := clock.NewFake(pollT0)
	fx := newAccountFixture(t, clk)
	s, ctx := fx.s, context.Background()
	if f := storetest.Feed(t, s, fx.instant.ID); f.SubscriberCount != 2 {
		t.Fatalf("before: feed has %d subscribers, want 2", f.SubscriberCount)
	}
	del, err := s.DeleteUser(ctx, fx.u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if del.Subscriptions != 3 || del.Digests != 1 || del.PendingMail != 2 || len(del.Feeds) != 3 {
		t.Errorf("deletion %+v, want 3 subscriptions, 1 digest, 2 pending mails, 3 feeds", del)
	}
	count := func(table, where string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := s.DB.Table(table).Where(where, args...).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		table, where string
		want         int64
	}{
		{"subscriptions", "user_id = ?", 0},
		{"digests", "user_id = ?", 0},
		{"outbox", "user_id = ? AND state IN ('queued', 'held')", 0},
		{"outbox", "user_id = ? AND state = 'sent'", 1},
		{"ledger_entries", "user_id = ?", 2},
		{"purchases", "user_id = ?", 1},
		{"users", "id = ? AND email LIKE '%Reader%'", 0},
	} {
		if n := count(c.table, c.where, fx.u.ID); n != c.want {
			t.Errorf("%s where %s: %d rows, want %d", c.table, c.where, n, c.want)
		}
	}
	sent, err := s.OutboxByID(ctx, fx.sent)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Address != store.Tombstone(fx.u.ID) || sent.Payload != "" {
		t.Errorf("sent row kept to %q payload %q, want the tombstone and no message", sent.Address, sent.Payload)
	}
	if f := storetest.Feed(t, s, fx.instant.ID); f.SubscriberCount != 1 {
		t.Errorf("after: feed has %d subscribers, want 1 (the neighbour)", f.SubscriberCount)
	}
	if f := storetest.Feed(t, s, fx.digestd.ID); f.SubscriberCount != 0 {
		t.Errorf("after: digest feed has %d subscribers, want 0", f.SubscriberCount)
	}
	if checkLedgerConsistent(t, s, fx.u.ID) != 110 {
		t.Errorf("the deleted account's ledger no longer sums to its balance 110")
	}
	if n := count("outbox", "id = ?", fx.otherMail); n != 1 {
		t.Errorf("the neighbour's queued mail was touched")
	}
	if _, err := s.UserByID(ctx, fx.u.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UserByID of the deleted account: %v, want ErrNotFound", err)
	}
	if _, err := s.UserByEmail(ctx, "Reader@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UserByEmail of the deleted address: %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteUser(ctx, fx.u.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting twice: %v, want ErrNotFound", err)
	}
	again, created, err := s.EnsureUser(ctx, "Reader@example.com")
	if err != nil || !created || again.ID == fx.u.ID || again.Balance != 0 {
		t.Errorf("signing up again: %+v created=%v err=%v, want a new empty account", again, created, err)
	}
}
