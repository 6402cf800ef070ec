package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestRunningLowArming: below the line a reader is warned once; a refund
// lifting them back does not arm the warning again, credits from outside
// that reach the line do, and a top-up that stays below does not; a reader
// told they ran out is not also told they run low.
func TestRunningLowArming(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	u := newUser(t, s, "low@example.com", 20)
	if err := s.SetLowLines(ctx, []store.LowLineUpdate{{UserID: u.ID, Line: 14, Due: clk.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	notice := func(userID, episode, balance, line int64) (string, store.Notice) {
		k := fmt.Sprintf("lowcredits:%d:%d", userID, episode)
		keys = append(keys, fmt.Sprintf("%s balance %d line %d", k, balance, line))
		return k, store.Notice{Subject: "low", Text: "low"}
	}
	post := func(kind string, amount int64, key string) {
		t.Helper()
		if _, err := s.PostLedgerEntry(ctx, u.ID, kind, amount, key, "test"); err != nil {
			t.Fatal(err)
		}
	}
	warn := func(step string, want int) {
		t.Helper()
		got, err := s.WarnRunningLow(ctx, []int64{u.ID}, notice)
		if err != nil || got != want {
			t.Fatalf("%s: %d warnings (%v), want %d; notices so far %q", step, got, err, want, keys)
		}
	}
	warn("above the line", 0)
	post(store.LedgerCharge, -10, "charge:1")
	warn("below the line", 1)
	warn("still below", 0)
	post(store.LedgerRefund, 10, "refund:charge:1")
	post(store.LedgerCharge, -10, "charge:2")
	warn("below again after a refund", 0)
	post(store.LedgerGrant, 1, "grant:1") // 11: still below
	post(store.LedgerCharge, -1, "charge:3")
	warn("after a top-up below the line", 0)
	post(store.LedgerPurchase, 5, "purchase:1") // 15: above
	post(store.LedgerCharge, -5, "charge:4")
	warn("below after a purchase", 1)
	var rows int64
	if err := s.DB.Model(&store.OutboxRow{}).Where("user_id = ? AND kind = ?", u.ID, store.KindNotice).Count(&rows).Error; err != nil || rows != 2 {
		t.Fatalf("%d notice rows (%v), want 2: %q", rows, err, keys)
	}
	post(store.LedgerGrant, 10, "grant:2") // 20: armed
	if err := s.DB.Exec("UPDATE users SET credit_notice_at = ? WHERE id = ?", clk.Now(), u.ID).Error; err != nil {
		t.Fatal(err)
	}
	post(store.LedgerCharge, -10, "charge:5")
	warn("told they ran out", 0)
}

// TestClaimLowLines: lines never computed and those due are claimed once
// until the lease ends; deleted readers are not.
func TestClaimLowLines(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	a, b, c := newUser(t, s, "a@example.com", 1), newUser(t, s, "b@example.com", 1), newUser(t, s, "c@example.com", 1)
	if _, err := s.DeleteUser(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	if err := s.SetLowLines(ctx, []store.LowLineUpdate{{UserID: b.ID, Line: 3, Due: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	claim := func(at time.Time) []int64 {
		t.Helper()
		ids, err := s.ClaimLowLines(ctx, at, 10*time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := claim(now); len(ids) != 1 || ids[0] != a.ID {
		t.Fatalf("first claim %v, want only the never computed %d", ids, a.ID)
	}
	if ids := claim(now.Add(time.Minute)); len(ids) != 0 {
		t.Fatalf("claimed again within the lease: %v", ids)
	}
	if ids := claim(now.Add(time.Hour)); len(ids) != 2 {
		t.Fatalf("after an hour %v, want a (lease over) and b (due)", ids)
	}
	if err := s.SetLowLines(ctx, []store.LowLineUpdate{{UserID: a.ID, Line: -1, Due: now}}); err == nil {
		t.Error("a negative line was stored")
	}
}
