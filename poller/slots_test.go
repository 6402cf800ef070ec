package poller

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	ctx := context.Background()
	s := newSlots(8)
	if n, err := s.take(ctx, 4); n != 8 || err != nil {
		t.Fatalf("first take: %d %v, want all 8", n, err)
	}
	s.put(3)
	s.put(0)  // nothing
	s.put(-2) // nothing
	// 3 free, 4 wanted: take waits for the next put.
	got := make(chan int)
	go func() {
		n, _ := s.take(ctx, 4)
		got <- n
	}()
	select {
	case n := <-got:
		t.Fatalf("take returned %d with 3 of 4 free", n)
	default:
	}
	s.put(2)
	select {
	case n := <-got:
		if n != 5 {
			t.Fatalf("take after put: %d, want 5", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take did not see the put")
	}
	// low above the size is capped at the size.
	s.put(8)
	if n, err := s.take(ctx, 100); n != 8 || err != nil {
		t.Fatalf("take(100) of 8: %d %v", n, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.take(cctx, 1); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("take with an ended context: %d %v", n, err)
	}
}
