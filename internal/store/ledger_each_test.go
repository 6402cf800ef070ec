package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestEachLedgerEntry: every entry of the person, oldest first, across
// pages; none of another person's; fn's error stops the walk.
func TestEachLedgerEntry(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	u := newUser(t, s, "long@example.com", 0)
	other := newUser(t, s, "other@example.com", 3)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var es []store.LedgerEntry
	for i := range 2503 {
		es = append(es, store.LedgerEntry{UserID: u.ID, Kind: store.LedgerGrant, Amount: 1, BalanceAfter: int64(i + 1),
			IdempotencyKey: fmt.Sprintf("grant:test:%d", i), Reason: "r", CreatedAt: at.Add(time.Duration(i) * time.Second)})
	}
	if err := s.DB.CreateInBatches(&es, 500).Error; err != nil {
		t.Fatal(err)
	}
	var seen []int64
	err := s.EachLedgerEntry(ctx, u.ID, func(e store.LedgerEntry) error {
		if e.UserID != u.ID {
			t.Fatalf("entry %d of user %d", e.ID, e.UserID)
		}
		seen = append(seen, e.BalanceAfter)
		return nil
	})
	if err != nil || len(seen) != 2503 {
		t.Fatalf("walked %d entries (%v), want 2503", len(seen), err)
	}
	for i, b := range seen {
		if b != int64(i+1) {
			t.Fatalf("entry %d has balance %d: not oldest first", i, b)
		}
	}
	stop := errors.New("stop")
	n := 0
	err = s.EachLedgerEntry(ctx, other.ID, func(store.LedgerEntry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("walk stopped after %d with %v, want 1 and stop", n, err)
	}
}
