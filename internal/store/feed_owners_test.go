package store_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// lapseNotices are plain notices keyed the way package notices keys them.
var lapseNotices = store.LapseNotices{
	Reader: func(f store.Feed, sub store.Subscription, seq int, deadline time.Time) (string, store.Notice) {
		return "test-lapse:" + itoa(f.ID) + ":" + itoa(int64(seq)) + ":" + itoa(sub.ID), store.Notice{Subject: "publisher stopped paying"}
	},
	Owner: func(f store.Feed, owner int64, seq int, deadline time.Time) (string, store.Notice) {
		return "test-owner:" + itoa(f.ID) + ":" + itoa(int64(seq)), store.Notice{Subject: "your credits ran out"}
	},
	Ended: func(f store.Feed, sub store.Subscription) (string, store.Notice) {
		return "test-ended:" + itoa(sub.ID), store.Notice{Subject: "unsubscribed"}
	},
}

func ceil5(n int) int { return (n + 4) / 5 }

// ownerRun sends what is queued: claims it, charges it and marks it sent,
// and returns the outcome of each claimed paid email by dedupe key.
func ownerRun(t *testing.T, s *store.Store, clk *clock.Fake, worker string) map[string]store.ChargeOutcome {
	t.Helper()
	ctx := context.Background()
	rows := claimAll(t, s, worker, clk.Now())
	got, err := s.ChargeOutbox(ctx, worker, ptrs(rows), notice)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.ChargeOutcome{}
	for i, r := range rows {
		if r.Kind != store.KindNotice {
			out[r.DedupeKey] = got[i]
		}
		if got[i].Sendable() {
			if err := s.DB.Model(&store.OutboxRow{}).Where("id = ?", r.ID).Updates(map[string]any{"state": store.OutboxSent,
				"lease_owner": ""}).Error; err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// TestOwnerPaidFeed: an owner-paid feed with 3 instant readers and 1
// digest reader charges its owner 3 per post and 1 per issue and the
// readers nothing; when the owner runs out the posts still go out, the
// readers (and the owner) are told once, and after the notice period the
// readers who did nothing are unsubscribed while the one who chose to pay
// keeps receiving and pays; credits bought by the owner end the lapse.
func TestOwnerPaidFeed(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/owned", 3, 1, false)
	owner := newUser(t, s, "publisher@example.com", 4)
	if _, err := s.SetFeedOwner(ctx, fx.feed.ID, owner.ID, store.OwnerByOperator); err != nil {
		t.Fatal(err)
	}
	poll := func(id string) {
		t.Helper()
		fx.claim(t, "p")
		if _, err := s.RecordPoll(ctx, "p", fx.record([]store.NewItem{item(id, "")}, true)); err != nil {
			t.Fatal(err)
		}
	}
	balance := func(u int64, want int64, when string) {
		t.Helper()
		if b := checkLedgerConsistent(t, s, u); b != want {
			t.Errorf("%s: user %d has %d credits, want %d", when, u, b, want)
		}
	}

	// A post: the owner pays 1 per instant reader; readers have 0 credits
	// and nothing is held.
	poll("a")
	outs := ownerRun(t, s, clk, "w1")
	if len(outs) != 3 {
		t.Fatalf("post a: %d emails, want 3: %v", len(outs), outs)
	}
	for k, o := range outs {
		if o != store.Charged {
			t.Errorf("post a: %s %v, want charged (to the owner)", k, o)
		}
	}
	balance(owner.ID, 1, "after post a")
	for _, u := range fx.users {
		balance(u, 0, "after post a")
	}

	// The digest slot: one issue carrying only the owned feed costs the
	// reader 0 and the owner 1.
	clk.Advance(24 * time.Hour)
	assembleDue(t, s, clk)
	outs = ownerRun(t, s, clk, "w2")
	if len(outs) != 1 {
		t.Fatalf("digest: %d emails, want 1: %v", len(outs), outs)
	}
	for k, o := range outs {
		if o != store.ChargeFree {
			t.Errorf("digest %s: %v, want free to the reader", k, o)
		}
	}
	balance(owner.ID, 0, "after the digest issue")
	if n := count(t, s, "ledger_entries", "user_id = ? AND kind = ?", owner.ID, store.LedgerCharge); n != 4 {
		t.Errorf("owner has %d charges, want 4 (3 posts + 1 issue)", n)
	}
	// The issue's email fails for good: its publisher gets the issue's
	// credit back, once however often the failure is recorded.
	var issue store.OutboxRow
	if err := s.DB.Where("kind = ?", store.KindDigest).Take(&issue).Error; err != nil {
		t.Fatal(err)
	}
	s.DB.Exec(`UPDATE outbox SET state = 'queued', lease_owner = 'w2' WHERE id = ?`, issue.ID)
	for range 2 {
		f := store.Failure{Owner: "w2", Row: &issue, Reason: "550 no such user"}
		if _, err := s.FailOutbox(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	balance(owner.ID, 1, "after the issue's email failed")
	s.DB.Exec(`UPDATE outbox SET state = 'sent' WHERE id = ?`, issue.ID)
	if _, _, err := s.AddLedgerEntry(ctx, owner.ID, store.LedgerAdjustment, -1, "test:spend-refund", "spend the refund again"); err != nil {
		t.Fatal(err)
	}
	for _, u := range fx.users {
		if n := count(t, s, "ledger_entries", "user_id = ?", u); n != 0 {
			t.Errorf("reader %d has %d ledger entries, want 0", u, n)
		}
	}

	// The owner runs out: the next post still goes out, free, and the
	// feed's lapse starts; readers and owner are told exactly once even
	// with two processes at it.
	poll("b")
	outs = ownerRun(t, s, clk, "w3")
	for k, o := range outs {
		if o != store.ChargeFree {
			t.Errorf("post b: %s %v, want free (owner out of credits)", k, o)
		}
	}
	var wg sync.WaitGroup
	told := make([]int, 3)
	for i := range told {
		wg.Go(func() {
			n, err := s.NotifyOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices)
			if err != nil {
				t.Error(err)
			}
			told[i] = n
		})
	}
	wg.Wait()
	if sum := told[0] + told[1] + told[2]; sum != 5 {
		t.Errorf("lapse notices queued %v (sum %d), want 5 in all (4 readers, 1 owner)", told, sum)
	}
	if n := count(t, s, "outbox", "kind = ? AND dedupe_key LIKE ?", store.KindNotice, "test-lapse:%"); n != 4 {
		t.Errorf("%d reader notices, want 4", n)
	}

	// Reader 0 chooses to pay; the period ends; the others are unsubscribed.
	payer := fx.users[0]
	if err := s.ChooseToPay(ctx, payer, fx.instant[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddLedgerEntry(ctx, payer, store.LedgerGrant, 5, "seed:payer", "seed"); err != nil {
		t.Fatal(err)
	}
	// Someone subscribes during the notice period: not told, so not swept.
	clk.Advance(time.Hour)
	late := newUser(t, s, "late@example.com", 0)
	lateSub, err := s.Subscribe(ctx, late.ID, fx.feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(billing.OwnerNoticePeriod - 2*time.Hour)
	if n, err := s.SweepOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices); err != nil || n != 0 {
		t.Fatalf("sweep before the period ended: %d ended, %v; want 0", n, err)
	}
	clk.Advance(2 * time.Hour)
	if n, err := s.SweepOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices); err != nil || n != 3 {
		t.Fatalf("sweep: %d ended, %v; want 3", n, err)
	}
	if n, err := s.SweepOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices); err != nil || n != 0 {
		t.Fatalf("second sweep: %d ended, %v; want 0", n, err)
	}
	if n := count(t, s, "subscriptions", "feed_id = ? AND state = ?", fx.feed.ID, store.SubActive); n != 2 {
		t.Errorf("%d active subscriptions after the sweep, want 2 (the payer and the late one)", n)
	}
	if n := count(t, s, "outbox", "dedupe_key LIKE ?", "test-ended:%"); n != 3 {
		t.Errorf("%d unsubscribed notices, want 3", n)
	}

	// The payer keeps receiving and pays; the late reader's email, which
	// the owner cannot pay, starts a new lapse told to them alone.
	poll("c")
	outs = ownerRun(t, s, clk, "w4")
	if len(outs) != 2 {
		t.Fatalf("post c: %d emails, want 2 (the payer's and the late one's): %v", len(outs), outs)
	}
	if o := outs["item:"+itoa(lateSub.ID)+":"+itoa(lastItem(t, s, fx.feed.ID))]; o != store.ChargeFree {
		t.Errorf("post c to the late reader: %v, want free (a new notice period)", o)
	}
	balance(payer, 4, "after post c")
	balance(owner.ID, 0, "after post c")
	if o, err := s.FeedOwnerOf(ctx, fx.feed.ID); err != nil || o.LapseSeq != 2 || o.SweptAt != nil || o.LapsedAt == nil {
		t.Errorf("after post c: owner row %+v %v, want a second lapse", o, err)
	}
	if n, err := s.NotifyOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices); err != nil || n != 2 {
		t.Errorf("second lapse: %d notices, %v; want 2 (the late reader, the owner)", n, err)
	}

	// The owner buys credits: the lapse ends and the owner pays again.
	if _, _, err := s.AddLedgerEntry(ctx, owner.ID, store.LedgerPurchase, 10, "purchase:test", "pack"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepOwnerLapses(ctx, billing.OwnerNoticePeriod, lapseNotices); err != nil {
		t.Fatal(err)
	}
	poll("d")
	ownerRun(t, s, clk, "w5")
	balance(payer, 4, "after post d")
	balance(owner.ID, 8, "after post d")
	balance(late.ID, 0, "after post d")

	// The owner's data export says which feed they pay for; a reader's
	// has no publisher part.
	u, err := s.UserByID(ctx, owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := s.ExportAccount(ctx, u)
	if err != nil || ex.Publisher == nil || len(ex.Publisher.OwnedFeeds) != 1 || ex.Publisher.OwnedFeeds[0].FeedURL != fx.feed.URL ||
		ex.Publisher.OwnedFeeds[0].VerifiedBy != store.OwnerByOperator {
		t.Errorf("owner's export: %+v %v", ex.Publisher, err)
	}
	pu, err := s.UserByID(ctx, payer)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := s.ExportAccount(ctx, pu); err != nil || ex.Publisher != nil {
		t.Errorf("reader's export: %+v %v", ex.Publisher, err)
	}

	// The owner deletes their account: the feed is no longer owner-paid.
	if _, err := s.DeleteUser(ctx, owner.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FeedOwnerOf(ctx, fx.feed.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("owner after deleting the account: %v, want not found", err)
	}
}

// assembleDue assembles every digest slot due now.
func assembleDue(t *testing.T, s *store.Store, clk *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	ds, err := s.ClaimDueDigests(ctx, "d", time.Minute, clk.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	plans := make([]store.SlotPlan, len(ds))
	for i, d := range ds {
		plans[i] = store.SlotPlan{DigestID: d.ID, Slot: d.NextSlotAt, Next: d.NextSlotAt.Add(24 * time.Hour)}
	}
	res, err := s.AssembleDigestIssues(ctx, "d", plans, ceil5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Issued != 1 || res.Credits != 0 {
		t.Fatalf("assembled %+v, want 1 issue costing its reader 0", res)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// lastItem returns the id of feed's newest item.
func lastItem(t *testing.T, s *store.Store, feed int64) int64 {
	t.Helper()
	var id int64
	if err := s.DB.Raw("SELECT MAX(id) FROM items WHERE feed_id = ?", feed).Scan(&id).Error; err != nil {
		t.Fatal(err)
	}
	return id
}
