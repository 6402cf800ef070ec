package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// newUser creates a user with an initial grant of credits (none when 0).
func newUser(t testing.TB, s *store.Store, email string, credits int64) *store.User {
	t.Helper()
	ctx := context.Background()
	u, _, err := s.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if credits > 0 {
		if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, credits, "seed:"+email, "seed"); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// checkLedgerConsistent asserts the cached balance equals the sum of the
// entries, every balance_after is ≥ 0, and the entries' running balance is
// the sum of the amounts so far.
func checkLedgerConsistent(t testing.TB, s *store.Store, userID int64) int64 {
	t.Helper()
	ctx := context.Background()
	entries, err := s.LedgerOf(ctx, userID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for i := len(entries) - 1; i >= 0; i-- { // oldest first
		e := entries[i]
		sum += e.Amount
		if e.BalanceAfter < 0 {
			t.Errorf("entry %d: balance_after %d < 0", e.ID, e.BalanceAfter)
		}
		if e.BalanceAfter != sum {
			t.Errorf("entry %d (%s %d): balance_after %d, running sum %d", e.ID, e.Kind, e.Amount, e.BalanceAfter, sum)
		}
	}
	bal, err := s.Balance(ctx, userID)
	if err != nil {
		t.Fatal(err)
	}
	if bal != sum {
		t.Errorf("cached balance %d != sum of entries %d", bal, sum)
	}
	return bal
}

func TestLedgerConcurrentCharges(t *testing.T) {
	dbs := []struct {
		name string
		open func(t *testing.T) *store.Store
	}{
		{"run-database", func(t *testing.T) *store.Store { return storetest.Open(t, storetest.Options{}) }},
		{"postgres", func(t *testing.T) *store.Store { return storetest.OpenPostgres(t, storetest.Options{}) }},
	}
	cases := []struct {
		initial, charge int64
		perG            int // charges per goroutine
	}{
		{initial: 100, charge: 3, perG: 2}, // 100 attempts of 3 against 100: 33 succeed
		{initial: 50, charge: 1, perG: 1},  // exactly enough
		{initial: 7, charge: 2, perG: 3},
	}
	const goroutines = 50
	for _, db := range dbs {
		t.Run(db.name, func(t *testing.T) {
			s := db.open(t)
			for ci, c := range cases {
				t.Run(fmt.Sprintf("initial=%d,charge=%d", c.initial, c.charge), func(t *testing.T) {
					ctx := context.Background()
					u := newUser(t, s, fmt.Sprintf("race%d@example.com", ci), c.initial)
					var (
						wg       sync.WaitGroup
						mu       sync.Mutex
						ok, poor int64
						other    []error
					)
					start := make(chan struct{})
					for g := range goroutines {
						wg.Go(func() {
							<-start
							for k := range c.perG {
								_, applied, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -c.charge,
									fmt.Sprintf("charge:race:%d:%d:%d", ci, g, k), "race")
								mu.Lock()
								switch {
								case err == nil && applied:
									ok++
								case errors.Is(err, store.ErrInsufficientCredits):
									poor++
								default:
									other = append(other, fmt.Errorf("applied=%v err=%v", applied, err))
								}
								mu.Unlock()
							}
						})
					}
					close(start)
					wg.Wait()
					for _, err := range other {
						t.Error(err)
					}
					attempts := int64(goroutines * c.perG)
					want := min(c.initial/c.charge, attempts)
					if ok != want || ok+poor != attempts {
						t.Errorf("%d charges succeeded, %d refused; want %d of %d", ok, poor, want, attempts)
					}
					bal := checkLedgerConsistent(t, s, u.ID)
					if bal != c.initial-want*c.charge {
						t.Errorf("balance %d, want %d", bal, c.initial-want*c.charge)
					}
				})
			}
		})
	}
}

func TestLedgerReplayIsANoOp(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "replay@example.com", 10)
	first, applied, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -4, "charge:x", "first")
	if err != nil || !applied {
		t.Fatalf("first charge: applied=%v err=%v", applied, err)
	}
	again, applied, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -4, "charge:x", "second")
	if err != nil || applied {
		t.Fatalf("replay: applied=%v err=%v, want applied=false", applied, err)
	}
	if again.ID != first.ID || again.Reason != "first" || again.BalanceAfter != 6 {
		t.Errorf("replay returned %+v, want the first entry %+v", again, first)
	}
	// Even with the balance now too low, a replay is not an overdraft.
	if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -6, "charge:y", ""); err != nil {
		t.Fatal(err)
	}
	if _, applied, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -4, "charge:x", ""); err != nil || applied {
		t.Errorf("replay at balance 0: applied=%v err=%v", applied, err)
	}
	// The same key for something else is a bug, not a replay.
	if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -5, "charge:x", ""); !errors.Is(err, store.ErrKeyConflict) {
		t.Errorf("key reused with another amount: err = %v, want ErrKeyConflict", err)
	}
	other := newUser(t, s, "other@example.com", 10)
	if _, _, err := s.AddLedgerEntry(ctx, other.ID, store.LedgerCharge, -4, "charge:x", ""); !errors.Is(err, store.ErrKeyConflict) {
		t.Errorf("key reused for another user: err = %v, want ErrKeyConflict", err)
	}
	if bal := checkLedgerConsistent(t, s, u.ID); bal != 0 {
		t.Errorf("balance %d, want 0", bal)
	}
	if es, _ := s.LedgerOf(ctx, u.ID, 0); len(es) != 3 {
		t.Errorf("%d entries, want 3 (seed, two charges)", len(es))
	}
}

func TestLedgerRefusesBadEntriesAndWritesNothing(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "bad@example.com", 5)
	cases := []struct {
		name   string
		kind   string
		amount int64
		key    string
		want   error
	}{
		{"overdraft", store.LedgerCharge, -6, "k1", store.ErrInsufficientCredits},
		{"negative adjustment past zero", store.LedgerAdjustment, -6, "k2", store.ErrInsufficientCredits},
		{"positive charge", store.LedgerCharge, 1, "k3", store.ErrBadLedgerEntry},
		{"negative grant", store.LedgerGrant, -1, "k4", store.ErrBadLedgerEntry},
		{"negative refund", store.LedgerRefund, -1, "k5", store.ErrBadLedgerEntry},
		{"zero", store.LedgerGrant, 0, "k6", store.ErrBadLedgerEntry},
		{"unknown kind", "gift", 5, "k7", store.ErrBadLedgerEntry},
		{"empty key", store.LedgerGrant, 5, " ", store.ErrBadLedgerEntry},
		{"overflow", store.LedgerGrant, 1<<63 - 1, "k8", store.ErrBadLedgerEntry},
		{"no such user", store.LedgerGrant, 5, "k9", store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := u.ID
			if c.name == "no such user" {
				id = 999999
			}
			_, applied, err := s.AddLedgerEntry(ctx, id, c.kind, c.amount, c.key, c.name)
			if !errors.Is(err, c.want) || applied {
				t.Errorf("applied=%v err=%v, want %v", applied, err, c.want)
			}
		})
	}
	if bal := checkLedgerConsistent(t, s, u.ID); bal != 5 {
		t.Errorf("balance %d after refused entries, want 5", bal)
	}
	if es, _ := s.LedgerOf(ctx, u.ID, 0); len(es) != 1 {
		t.Errorf("%d entries, want only the seed", len(es))
	}
}

// The store's kinds, sign rules and trial key are billing's: the store
// refuses exactly the entries billing.CheckEntry refuses.
func TestLedgerAgreesWithBilling(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "agree@example.com", 1000)
	want := map[billing.EntryKind]string{billing.KindGrant: store.LedgerGrant, billing.KindPurchase: store.LedgerPurchase,
		billing.KindCharge: store.LedgerCharge, billing.KindRefund: store.LedgerRefund, billing.KindAdjustment: store.LedgerAdjustment}
	for _, k := range billing.Kinds() {
		if want[k] != string(k) {
			t.Errorf("billing kind %q has no store constant", k)
		}
		for _, amount := range []int64{-3, 0, 3} {
			key := fmt.Sprintf("agree:%s:%d", k, amount)
			_, _, err := s.AddLedgerEntry(ctx, u.ID, string(k), amount, key, "")
			billingOK := billing.CheckEntry(k, amount) == nil
			storeOK := !errors.Is(err, store.ErrBadLedgerEntry)
			if billingOK != storeOK {
				t.Errorf("%s %d: billing accepts=%v, store err=%v", k, amount, billingOK, err)
			}
		}
	}
	if store.TrialKey(42) != billing.KeyTrial(42) {
		t.Errorf("TrialKey %q != billing.KeyTrial %q", store.TrialKey(42), billing.KeyTrial(42))
	}
	checkLedgerConsistent(t, s, u.ID)
}

func TestGrantTrialOnce(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "trial@example.com", 0)
	for i := range 3 {
		e, applied, err := s.GrantTrialOnce(ctx, u.ID, 500)
		if err != nil {
			t.Fatal(err)
		}
		if applied != (i == 0) || e.IdempotencyKey != "trial:"+fmt.Sprint(u.ID) || e.Amount != 500 {
			t.Errorf("call %d: applied=%v entry=%+v", i, applied, e)
		}
	}
	got, _ := s.UserByID(ctx, u.ID)
	if !got.TrialGranted || got.Balance != 500 {
		t.Errorf("after trial: trial_granted=%v balance=%d", got.TrialGranted, got.Balance)
	}
	off := newUser(t, s, "notrial@example.com", 0)
	if _, applied, err := s.GrantTrialOnce(ctx, off.ID, 0); err != nil || applied {
		t.Errorf("zero trial: applied=%v err=%v", applied, err)
	}
	got, _ = s.UserByID(ctx, off.ID)
	if !got.TrialGranted || got.Balance != 0 {
		t.Errorf("zero trial: trial_granted=%v balance=%d", got.TrialGranted, got.Balance)
	}
	if _, _, err := s.GrantTrialOnce(ctx, 424242, 500); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown user: %v", err)
	}
}

func TestCreditsArrivingReleaseHeldMail(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	u := newUser(t, s, "held@example.com", 0)
	now := clk.Now()
	if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).Update("credit_notice_at", now).Error; err != nil {
		t.Fatal(err)
	}
	credits := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:1", UserID: u.ID, Credits: 1,
		State: store.OutboxHeld, LastError: store.HoldCredits, NextAttemptAt: now.Add(-time.Hour), CreatedAt: now})
	bouncing := addOutbox(t, s, store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1:2", UserID: u.ID, Credits: 1,
		State: store.OutboxHeld, LastError: store.HoldBouncing, NextAttemptAt: now, CreatedAt: now})

	clk.Advance(time.Minute)
	r, err := s.PostLedgerEntry(ctx, u.ID, store.LedgerRefund, 1, "refund:x", "a refund")
	if err != nil || r.Released != 1 {
		t.Fatalf("refund: released %d, err %v", r.Released, err)
	}
	row, _ := s.OutboxByID(ctx, credits)
	if row.State != store.OutboxQueued || row.LastError != "" || !row.NextAttemptAt.Equal(clk.Now()) {
		t.Errorf("credits-held row after refund: %s %q due %v", row.State, row.LastError, row.NextAttemptAt)
	}
	if row, _ := s.OutboxByID(ctx, bouncing); row.State != store.OutboxHeld {
		t.Errorf("bouncing-held row released by credits: %s", row.State)
	}
	got, _ := s.UserByID(ctx, u.ID)
	if got.CreditNoticeAt == nil {
		t.Error("a refund must not start a new notice episode")
	}
	if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerPurchase, 100, "purchase:sess", "pack"); err != nil {
		t.Fatal(err)
	}
	got, _ = s.UserByID(ctx, u.ID)
	if got.CreditNoticeAt != nil {
		t.Error("a purchase must clear credit_notice_at")
	}
	n, err := s.ClearBouncing(ctx, u.ID)
	if err != nil || n != 1 {
		t.Errorf("ClearBouncing released %d, err %v", n, err)
	}
	checkLedgerConsistent(t, s, u.ID)
}

func TestLedgerOfNewestFirst(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "list@example.com", 10)
	for i := range 4 {
		if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -1, fmt.Sprintf("c%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.LedgerOf(ctx, u.ID, 2)
	if err != nil || len(es) != 2 || es[0].IdempotencyKey != "c3" || es[1].IdempotencyKey != "c2" {
		t.Fatalf("LedgerOf(limit 2) = %+v, %v", es, err)
	}
	if e, err := s.LedgerEntryByKey(ctx, "c0"); err != nil || e.BalanceAfter != 9 {
		t.Errorf("LedgerEntryByKey: %+v %v", e, err)
	}
	if _, err := s.LedgerEntryByKey(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
}
