package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestApplyReport: each kind of report has its effect once, however often
// it arrives: hard bounces refund and count toward the bouncing mark, soft
// ones are only counted, complaints and unsubscribes end the subscription
// (all of a digest's for a digest email).
func TestApplyReport(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	u := newUser(t, s, "reader@example.com", 10)
	feed, _, err := s.EnsureFeed(ctx, "https://a.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, u.ID, feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	sent := func(key string) int64 {
		id := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: key, UserID: u.ID, SubscriptionID: &sub.ID,
			Address: u.Email, Credits: 1, State: store.OutboxSent, NextAttemptAt: now, CreatedAt: now})
		if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -1, billing.KeyOutboxCharge(key), "charge"); err != nil {
			t.Fatal(err)
		}
		return id
	}
	apply := func(r store.Report) store.ReportResult {
		t.Helper()
		r.BounceLimit = 3
		clk.Advance(time.Minute) // reports arrive one after the other
		res, err := s.ApplyReport(ctx, r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return res
	}
	user := func() *store.User {
		t.Helper()
		got, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// A hard bounce refunds and counts; the same report again changes nothing.
	a := sent("item:a")
	hard := store.Report{OutboxID: a, Kind: store.InboundBounce, Severity: store.SeverityHard, Reason: "unknown-user",
		Party: "reader", Final: true, Status: "5.1.1", Detail: "550 5.1.1 no such user"}
	if r := apply(hard); r.Duplicate || !r.Refunded || r.NowBouncing || r.Address != u.Email {
		t.Fatalf("first hard bounce: %+v", r)
	}
	if r := apply(hard); !r.Duplicate || r.Refunded {
		t.Fatalf("same bounce again: %+v", r)
	}
	if got := user(); got.HardBounces != 1 || got.Balance != 10 || !strings.Contains(got.LastBounce, "5.1.1") {
		t.Fatalf("after one hard bounce: hard %d balance %d last %q", got.HardBounces, got.Balance, got.LastBounce)
	}
	// Soft bounces are counted once per email and stop nothing.
	b := sent("item:b")
	soft := store.Report{OutboxID: b, Kind: store.InboundBounce, Severity: store.SeveritySoft, Reason: "mailbox-full",
		Party: "reader", Status: "4.2.2", Detail: "mailbox full"}
	apply(soft)
	apply(soft)
	if got := user(); got.SoftBounces != 1 || got.BouncingSince != nil || got.HardBounces != 1 {
		t.Fatalf("after soft bounces: %+v", got)
	}
	// A block of our own sending IP counts against nobody; being final, it
	// gives the email's credit back; twice changes nothing.
	e := sent("item:e")
	blocked := store.Report{OutboxID: e, Kind: store.InboundBounce, Reason: "blocked", Party: "sender", Final: true,
		Status: "5.7.1", Detail: "554 5.7.1 blocked using zen.spamhaus.org"}
	if r := apply(blocked); !r.Refunded || r.NowBouncing || !strings.Contains(r.Action, "sender-side") {
		t.Fatalf("sender-side bounce: %+v", r)
	}
	if r := apply(blocked); !r.Duplicate || r.Refunded {
		t.Fatalf("sender-side bounce again: %+v", r)
	}
	if got := user(); got.SoftBounces != 1 || got.HardBounces != 1 || strings.Contains(got.LastBounce, "spamhaus") {
		t.Fatalf("after a sender-side bounce: hard %d soft %d last %q", got.HardBounces, got.SoftBounces, got.LastBounce)
	}
	// The third hard bounce marks the address bouncing and holds queued mail.
	queued := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:q", UserID: u.ID, SubscriptionID: &sub.ID,
		Address: u.Email, Credits: 1, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	apply(store.Report{OutboxID: b, Kind: store.InboundBounce, Severity: store.SeverityHard, Status: "5.1.1"})
	if r := apply(store.Report{OutboxID: sent("item:c"), Kind: store.InboundBounce, Severity: store.SeverityHard, Status: "5.1.1"}); !r.NowBouncing {
		t.Fatalf("third hard bounce: %+v", r)
	}
	var q store.OutboxRow
	if err := s.DB.Take(&q, queued).Error; err != nil || q.State != store.OutboxHeld || q.LastError != store.HoldBouncing {
		t.Fatalf("queued email: %s %q %v, want held for bouncing", q.State, q.LastError, err)
	}
	// A complaint ends the subscription, once.
	if r := apply(store.Report{OutboxID: a, Kind: store.InboundComplaint}); r.Ended != 1 {
		t.Fatalf("complaint: %+v", r)
	}
	if r := apply(store.Report{OutboxID: a, Kind: store.InboundComplaint}); !r.Duplicate || r.Ended != 0 {
		t.Fatalf("complaint again: %+v", r)
	}
	if got, _ := s.SubscriptionByID(ctx, sub.ID); got.State != store.SubEnded || got.EndedReason != "spam complaint" {
		t.Fatalf("subscription %s %q, want ended by the complaint", got.State, got.EndedReason)
	}
	// An unsubscribe by email on a digest email ends the digest's subscriptions.
	feed2, _, _ := s.EnsureFeed(ctx, "https://b.example/feed")
	feed3, _, _ := s.EnsureFeed(ctx, "https://c.example/feed")
	d := &store.Digest{UserID: u.ID, Name: "Morning", Schedule: "0 7 * * *", Timezone: "UTC", NextSlotAt: now.Add(time.Hour), CreatedAt: now}
	if err := s.DB.Create(d).Error; err != nil {
		t.Fatal(err)
	}
	for _, f := range []*store.Feed{feed2, feed3} {
		if _, err := s.Subscribe(ctx, u.ID, f.ID, &d.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	issue := &store.DigestIssue{DigestID: d.ID, SlotAt: now, State: "sent", CreatedAt: now}
	if err := s.DB.Create(issue).Error; err != nil {
		t.Fatal(err)
	}
	dm := addOutbox(t, s, store.OutboxRow{Kind: "digest", DedupeKey: "digest:1", UserID: u.ID, IssueID: &issue.ID,
		Address: u.Email, State: store.OutboxSent, NextAttemptAt: now, CreatedAt: now})
	if r := apply(store.Report{OutboxID: dm, Kind: store.InboundUnsubscribe}); r.Ended != 2 {
		t.Fatalf("unsubscribe by email from a digest: %+v", r)
	}
	// Reports naming no email, or with no effect, change nothing.
	if _, err := s.ApplyReport(ctx, store.Report{OutboxID: 999999, Kind: store.InboundUnsubscribe}); !errors.Is(err, store.ErrNoSuchEmail) {
		t.Fatalf("unknown email: %v", err)
	}
	if _, err := s.ApplyReport(ctx, store.Report{OutboxID: a, Kind: "auto-reply"}); err == nil {
		t.Fatal("a report kind without effect was applied")
	}
	checkLedgerConsistent(t, s, u.ID)

	// The reader's data export carries the bounce state and every report.
	ex, err := s.ExportAccount(ctx, user())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range ex.Delivery.Reports {
		kinds = append(kinds, r.Kind+"/"+r.Severity+"/"+r.Reason+"/"+r.Party+"/"+r.Status)
	}
	wantKinds := "bounce/hard/unknown-user/reader/5.1.1 bounce/soft/mailbox-full/reader/4.2.2 bounce//blocked/sender/5.7.1 " +
		"bounce/hard///5.1.1 bounce/hard///5.1.1 complaint//// unsubscribe////"
	if got := strings.Join(kinds, " "); got != wantKinds {
		t.Errorf("exported reports %q, want %q", got, wantKinds)
	}
	if d := ex.Delivery; d.HardBounces != 3 || d.SoftBounces != 1 || d.BouncingSince == nil {
		t.Errorf("exported delivery state %+v, want 3 hard, 1 soft, bouncing", d)
	}
}
