package store_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// addOutbox inserts a row as given (Address defaulted) and returns its id.
func addOutbox(t testing.TB, s *store.Store, r store.OutboxRow) int64 {
	t.Helper()
	if r.Address == "" {
		r.Address = "someone@example.com"
	}
	if err := s.DB.Create(&r).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func notice(userID, episode int64) (string, store.Notice) {
	return billing.KeyCreditsNotice(userID, episode), store.Notice{Subject: "out of credits", Text: "buy some"}
}

func ptrs(rows []store.OutboxRow) []*store.OutboxRow {
	out := make([]*store.OutboxRow, len(rows))
	for i := range rows {
		out[i] = &rows[i]
	}
	return out
}

func claimAll(t testing.TB, s *store.Store, owner string, now time.Time) []store.OutboxRow {
	t.Helper()
	rows, err := s.ClaimOutbox(context.Background(), owner, time.Minute, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	// UPDATE … RETURNING gives no order on Postgres; charge oldest first.
	sort.Slice(rows, func(a, b int) bool { return rows[a].ID < rows[b].ID })
	return rows
}

func countNotices(t testing.TB, s *store.Store, userID int64) int64 {
	t.Helper()
	var n int64
	if err := s.DB.Model(&store.OutboxRow{}).Where("user_id = ? AND kind = ?", userID, store.KindNotice).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestChargeOutbox(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	rich := newUser(t, s, "rich@example.com", 10)
	poor := newUser(t, s, "poor@example.com", 2)
	q := func(u *store.User, key string, credits int) int64 {
		return addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: key, UserID: u.ID, Credits: credits,
			State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
	}
	q(rich, "item:1:1", 1)
	q(poor, "item:2:1", 1)
	q(poor, "item:2:2", 1)
	heldA := q(poor, "item:2:3", 1)
	heldB := q(poor, "item:2:4", 1)
	free := addOutbox(t, s, store.OutboxRow{Kind: store.KindNotice, DedupeKey: "n:1", UserID: poor.ID,
		State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})

	rows := claimAll(t, s, "w1", now)
	if len(rows) != 6 {
		t.Fatalf("claimed %d rows, want 6", len(rows))
	}
	got, err := s.ChargeOutbox(ctx, "w1", ptrs(rows), notice)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]store.ChargeOutcome{heldA: store.HeldForCredits, heldB: store.HeldForCredits, free: store.ChargeFree}
	for i, r := range rows {
		w, ok := want[r.ID]
		if !ok {
			w = store.Charged
		}
		if got[i] != w {
			t.Errorf("row %s: %v, want %v", r.DedupeKey, got[i], w)
		}
	}
	if b := checkLedgerConsistent(t, s, rich.ID); b != 9 {
		t.Errorf("rich balance %d, want 9", b)
	}
	if b := checkLedgerConsistent(t, s, poor.ID); b != 0 {
		t.Errorf("poor balance %d, want 0", b)
	}
	for _, id := range []int64{heldA, heldB} {
		r, _ := s.OutboxByID(ctx, id)
		if r.State != store.OutboxHeld || r.LastError != store.HoldCredits || r.LeaseOwner != "" {
			t.Errorf("row %d: state %s reason %q owner %q", id, r.State, r.LastError, r.LeaseOwner)
		}
	}
	if n := countNotices(t, s, poor.ID); n != 2 { // the queued free one plus one shortage notice
		t.Errorf("poor has %d notices, want 2", n)
	}
	u, _ := s.UserByID(ctx, poor.ID)
	if u.CreditNoticeAt == nil {
		t.Error("credit_notice_at not set")
	}

	// The same rows charged again (a retry, or a second worker after the
	// lease ran out): nothing charged twice.
	clk.Advance(2 * time.Minute)
	again := claimAll(t, s, "w2", clk.Now())
	if len(again) != 5 {
		t.Fatalf("reclaimed %d rows, want the 4 unheld ones and the new notice", len(again))
	}
	got, err = s.ChargeOutbox(ctx, "w2", ptrs(again), notice)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		w := store.ChargedBefore
		if r.ID == free {
			w = store.ChargeFree
		}
		if r.Kind == store.KindNotice && r.ID != free {
			continue // the shortage notice just queued
		}
		if got[i] != w {
			t.Errorf("second charge of %s: %v, want %v", r.DedupeKey, got[i], w)
		}
	}
	// The first worker lost its lease: it may charge nothing.
	got, err = s.ChargeOutbox(ctx, "w1", ptrs(rows), notice)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != store.LeaseLost {
			t.Errorf("stale worker, row %s: %v, want LeaseLost", rows[i].DedupeKey, got[i])
		}
	}

	// Running short again in the same episode: no second notice. After a
	// purchase and a new shortage: one more.
	q(poor, "item:2:5", 1)
	clk.Advance(2 * time.Minute)
	rows = claimAll(t, s, "w3", clk.Now())
	if _, err := s.ChargeOutbox(ctx, "w3", ptrs(rows), notice); err != nil {
		t.Fatal(err)
	}
	if n := countNotices(t, s, poor.ID); n != 2 {
		t.Errorf("same shortage: %d notices, want still 2", n)
	}
	// A purchase of 1 credit releases the oldest held row only: the
	// others keep waiting in the same shortage, told once already.
	r, err := s.PostLedgerEntry(ctx, poor.ID, store.LedgerPurchase, 1, "purchase:1", "")
	if err != nil || r.Released != 1 {
		t.Fatalf("purchase released %d, err %v; want 1", r.Released, err)
	}
	clk.Advance(time.Minute)
	rows = claimAll(t, s, "w4", clk.Now())
	got, err = s.ChargeOutbox(ctx, "w4", ptrs(rows), notice)
	if err != nil {
		t.Fatal(err)
	}
	var charged, held int
	for _, o := range got {
		switch o {
		case store.Charged:
			charged++
		case store.HeldForCredits:
			held++
		}
	}
	if charged != 1 || held != 0 {
		t.Errorf("after buying 1 credit: %d charged, %d held again; want 1 and 0", charged, held)
	}
	if n := countNotices(t, s, poor.ID); n != 2 {
		t.Errorf("a top-up that pays for part of what waits: %d notices, want still 2", n)
	}
	var waiting int64
	if err := s.DB.Model(&store.OutboxRow{}).Where("user_id = ? AND state = ?", poor.ID, store.OutboxHeld).Count(&waiting).Error; err != nil || waiting != 2 {
		t.Errorf("%d rows still held (%v), want 2", waiting, err)
	}
	checkLedgerConsistent(t, s, poor.ID)
}

func TestMarkSentRetryReleaseAreLeaseGuarded(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	u := newUser(t, s, "m@example.com", 0)
	if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).Update("hard_bounces", 2).Error; err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 4 {
		ids = append(ids, addOutbox(t, s, store.OutboxRow{Kind: store.KindNotice, DedupeKey: fmt.Sprint("n", i),
			UserID: u.ID, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now}))
	}
	claimAll(t, s, "w1", now)
	n, err := s.MarkOutboxSent(ctx, "w1", []store.SentMark{{ID: ids[0], UserID: u.ID, MessageID: "<a@x>"}, {ID: ids[1], UserID: u.ID, MessageID: "<b@x>"}})
	if err != nil || n != 2 {
		t.Fatalf("MarkOutboxSent: %d, %v", n, err)
	}
	if n, _ := s.MarkOutboxSent(ctx, "w2", []store.SentMark{{ID: ids[2], UserID: u.ID}}); n != 0 {
		t.Error("another owner marked a row sent")
	}
	if n, _ := s.MarkOutboxSent(ctx, "w1", []store.SentMark{{ID: ids[0], UserID: u.ID}}); n != 0 {
		t.Error("a sent row was marked sent twice")
	}
	r, _ := s.OutboxByID(ctx, ids[1])
	if r.State != store.OutboxSent || r.MessageID != "<b@x>" || r.SentAt == nil || r.Attempts != 1 || r.LeaseOwner != "" {
		t.Errorf("sent row: %+v", r)
	}
	if got, _ := s.UserByID(ctx, u.ID); got.HardBounces != 0 {
		t.Errorf("hard_bounces %d after a delivery, want 0", got.HardBounces)
	}
	next := now.Add(time.Hour)
	if ok, err := s.RetryOutbox(ctx, "w1", ids[2], next, "450 try later"); err != nil || !ok {
		t.Fatalf("RetryOutbox: %v %v", ok, err)
	}
	r, _ = s.OutboxByID(ctx, ids[2])
	if r.State != store.OutboxQueued || !r.NextAttemptAt.Equal(next) || r.Attempts != 1 || r.LastError != "450 try later" {
		t.Errorf("retried row: %+v", r)
	}
	if ok, _ := s.RetryOutbox(ctx, "w1", ids[2], next, ""); ok {
		t.Error("retry of a row no longer leased")
	}
	clk.Advance(time.Second)
	if n, err := s.ReleaseOutbox(ctx, "w1", []int64{ids[3]}); err != nil || n != 1 {
		t.Fatalf("ReleaseOutbox: %d %v", n, err)
	}
	r, _ = s.OutboxByID(ctx, ids[3])
	if r.Attempts != 0 || !r.NextAttemptAt.Equal(clk.Now()) || r.LeaseOwner != "" {
		t.Errorf("released row: %+v", r)
	}
	d, err := s.OutboxDepths(ctx)
	if err != nil || d["outbox"] != 2 || d["held"] != 0 {
		t.Errorf("depths %v %v, want outbox 2 held 0", d, err)
	}
}

func TestFailOutboxRefundsAndMarksBouncing(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	u := newUser(t, s, "bounce@example.com", 10)
	var failing []int64
	for i := range 3 {
		failing = append(failing, addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprint("item:9:", i),
			UserID: u.ID, Credits: 1, State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now}))
	}
	rows := claimAll(t, s, "w1", now)
	if _, err := s.ChargeOutbox(ctx, "w1", ptrs(rows), notice); err != nil {
		t.Fatal(err)
	}
	// Queued after the claim: one paid, one free, one paid but leased by another worker.
	later := now.Add(time.Second)
	waiting := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:9:10", UserID: u.ID, Credits: 1,
		State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now})
	freeRow := addOutbox(t, s, store.OutboxRow{Kind: store.KindNotice, DedupeKey: "n:9", UserID: u.ID,
		State: store.OutboxQueued, NextAttemptAt: later, CreatedAt: now})
	leased := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:9:11", UserID: u.ID, Credits: 1,
		State: store.OutboxQueued, NextAttemptAt: now.Add(time.Hour), LeaseOwner: "w9", LeaseUntil: ptr(now.Add(time.Hour)), CreatedAt: now})

	for i, r := range rows {
		res, err := s.FailOutbox(ctx, store.Failure{Owner: "w1", Row: &rows[i], Reason: "550 no such user",
			HardBounce: true, BounceLimit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed || !res.Refunded || res.NowBouncing != (i == 2) {
			t.Errorf("failure %d: %+v", i, res)
		}
		if i == 2 && res.Held != 1 {
			t.Errorf("bouncing held %d rows, want 1 (the queued paid one)", res.Held)
		}
		again, _ := s.FailOutbox(ctx, store.Failure{Owner: "w1", Row: &rows[i], HardBounce: true})
		if again.Failed || again.Refunded {
			t.Errorf("failing row %d twice: %+v", r.ID, again)
		}
	}
	if b := checkLedgerConsistent(t, s, u.ID); b != 10 {
		t.Errorf("balance %d after three refunds, want 10", b)
	}
	got, _ := s.UserByID(ctx, u.ID)
	if got.HardBounces != 3 || got.BouncingSince == nil {
		t.Errorf("hard_bounces %d bouncing_since %v", got.HardBounces, got.BouncingSince)
	}
	states := map[int64]string{waiting: store.OutboxHeld, freeRow: store.OutboxQueued, leased: store.OutboxQueued, failing[0]: store.OutboxFailed}
	for id, want := range states {
		if r, _ := s.OutboxByID(ctx, id); r.State != want {
			t.Errorf("row %s: %s, want %s", r.DedupeKey, r.State, want)
		}
	}
	if n, err := s.ClearBouncing(ctx, u.ID); err != nil || n != 1 {
		t.Errorf("ClearBouncing released %d, %v", n, err)
	}
	got, _ = s.UserByID(ctx, u.ID)
	if got.HardBounces != 0 || got.BouncingSince != nil {
		t.Errorf("after clearing: hard_bounces %d bouncing_since %v", got.HardBounces, got.BouncingSince)
	}
}

func TestExpireHeld(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	start := clk.Now()
	u := newUser(t, s, "exp@example.com", 5)
	// One row charged by an earlier attempt and then held (bouncing), one
	// never charged.
	charged := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:3:1", UserID: u.ID, Credits: 1,
		State: store.OutboxQueued, NextAttemptAt: start, CreatedAt: start})
	rows := claimAll(t, s, "w1", start)
	if _, err := s.ChargeOutbox(ctx, "w1", ptrs(rows), notice); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.HoldOutbox(ctx, "w1", charged, store.HoldBouncing); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Another person's, so the refund above does not release it.
	other := newUser(t, s, "exp2@example.com", 0)
	plain := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:3:2", UserID: other.ID, Credits: 1,
		State: store.OutboxHeld, LastError: store.HoldCredits, NextAttemptAt: start, CreatedAt: start.Add(time.Hour)})
	hold := 30 * 24 * time.Hour

	for _, c := range []struct {
		at   time.Duration
		want int
	}{{hold - time.Second, 0}, {hold, 1}, {hold + time.Hour, 1}, {hold + 2*time.Hour, 0}} {
		got, err := s.ExpireHeld(ctx, start.Add(c.at), hold, 100)
		if err != nil || len(got) != c.want {
			t.Errorf("at +%v: expired %d (%v), want %d", c.at, len(got), err, c.want)
		}
	}
	for _, id := range []int64{charged, plain} {
		if r, _ := s.OutboxByID(ctx, id); r.State != store.OutboxExpired {
			t.Errorf("row %d: %s, want expired", id, r.State)
		}
	}
	if b := checkLedgerConsistent(t, s, u.ID); b != 5 {
		t.Errorf("balance %d, want 5 (the charged row refunded)", b)
	}
	if es, _ := s.LedgerOf(ctx, u.ID, 1); len(es) != 1 || es[0].Kind != store.LedgerRefund {
		t.Errorf("latest entry %+v, want the refund", es)
	}
}

func TestItemDeliveries(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	now := time.Now().UTC()
	u := newUser(t, s, "d@example.com", 0)
	f, _, err := s.EnsureFeed(ctx, "https://blog.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	it := store.Item{FeedID: f.ID, Identity: "a", Title: "Hello", SeenAt: now}
	if err := s.DB.Create(&it).Error; err != nil {
		t.Fatal(err)
	}
	good := store.OutboxRow{ID: 1, Kind: store.KindItem, SubscriptionID: &sub.ID, ItemID: &it.ID}
	missing := int64(999)
	gone := store.OutboxRow{ID: 2, Kind: store.KindItem, SubscriptionID: &sub.ID, ItemID: &missing}
	unset := store.OutboxRow{ID: 3, Kind: store.KindItem}
	got, err := s.ItemDeliveries(ctx, []*store.OutboxRow{&good, &gone, &unset})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := got[1]
	if len(got) != 1 || !ok || d.Item.Title != "Hello" || d.Feed.ID != f.ID || d.Subscription.ID != sub.ID {
		t.Errorf("ItemDeliveries = %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }
