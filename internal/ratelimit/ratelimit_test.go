package ratelimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/ratelimit"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	lim := ratelimit.Limit{Every: time.Minute, Burst: 3}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	cases := []struct {
		name     string
		tat      int64
		had      bool
		ok       bool
		next     int64
		wait     time.Duration
		limitArg ratelimit.Limit
	}{
		{"no row: full bucket", 0, false, true, ms(time.Minute), 0, lim},
		{"row in the past: full again", ms(-time.Hour), true, true, ms(time.Minute), 0, lim},
		{"one used", ms(time.Minute), true, true, ms(2 * time.Minute), 0, lim},
		{"two used", ms(2 * time.Minute), true, true, ms(3 * time.Minute), 0, lim},
		{"three used: refused", ms(3 * time.Minute), true, false, 0, time.Minute, lim},
		{"one and a half used", ms(90 * time.Second), true, true, ms(150 * time.Second), 0, lim},
		{"a second short of a token", ms(2*time.Minute + time.Second), true, false, 0, time.Second, lim},
		{"burst 0 counts as 1", 0, false, true, ms(time.Minute), 0, ratelimit.Limit{Every: time.Minute}},
		{"burst 0, used", ms(time.Minute), true, false, 0, time.Minute, ratelimit.Limit{Every: time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, ok, wait := ratelimit.Decide(c.tat, c.had, t0, c.limitArg)
			if ok != c.ok || next != c.next || wait != c.wait {
				t.Fatalf("Decide = %d, %v, %v; want %d, %v, %v", next, ok, wait, c.next, c.ok, c.wait)
			}
		})
	}
}

// TestLimiterSharedByProcesses: two stores on one database (two
// processes, or one before and after a restart) share the counts: the
// burst is spent once between them, and a refill is seen by both.
func TestLimiterSharedByProcesses(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	dsn := storetest.FreshDSN(t, storetest.URL())
	a := &ratelimit.Limiter{Counters: storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk}), Clock: clk}
	b := &ratelimit.Limiter{Counters: storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk, NoMigrate: true}), Clock: clk}
	k := ratelimit.Key{Name: "test:k", Limit: ratelimit.Limit{Every: 10 * time.Minute, Burst: 4}}
	took := 0
	for i := range 10 {
		lm := a
		if i%2 == 1 {
			lm = b
		}
		r, err := lm.Take(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK {
			took++
		} else if r.Key != k.Name || r.Wait <= 0 || r.Wait > 10*time.Minute {
			t.Fatalf("refusal %+v, want key %s and a wait of at most 10m", r, k.Name)
		}
	}
	if took != 4 {
		t.Fatalf("two processes took %d tokens of a burst of 4", took)
	}
	clk.Advance(10 * time.Minute)
	if r, err := b.Check(ctx, k); err != nil || !r.OK {
		t.Fatalf("after one interval: %+v, %v; want a token back", r, err)
	}
}

// TestLimiterTakeAllOrNothing: a request refused by one key takes nothing
// from the others; a key whose limit is off is not counted.
func TestLimiterTakeAllOrNothing(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := storetest.Open(t, storetest.Options{Clock: clk})
	lm := &ratelimit.Limiter{Counters: st, Clock: clk}
	wide := ratelimit.Key{Name: "test:wide", Limit: ratelimit.Limit{Every: time.Hour, Burst: 2}}
	narrow := ratelimit.Key{Name: "test:narrow", Limit: ratelimit.Limit{Every: time.Hour, Burst: 1}}
	off := ratelimit.Key{Name: "test:off"}
	if r, _ := lm.Take(ctx, wide, narrow, off); !r.OK {
		t.Fatalf("first take refused: %+v", r)
	}
	if r, _ := lm.Take(ctx, wide, narrow); r.OK || r.Key != narrow.Name {
		t.Fatalf("second take: %+v, want refused by %s", r, narrow.Name)
	}
	if r, _ := lm.Take(ctx, wide); !r.OK {
		t.Fatalf("the refused take spent wide's token: %+v", r)
	}
	if _, had, _ := st.RateLimitTAT(ctx, off.Name); had {
		t.Fatal("a key whose limit is off was stored")
	}
}

// TestLimiterConcurrent: many requests at once on one key, from several
// goroutines, never take more than the burst.
func TestLimiterConcurrent(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := storetest.Open(t, storetest.Options{Clock: clk, MaxOpenConns: 4})
	lm := &ratelimit.Limiter{Counters: st, Clock: clk}
	k := ratelimit.Key{Name: "test:busy", Limit: ratelimit.Limit{Every: time.Hour, Burst: 5}}
	var mu sync.Mutex
	took := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r, err := lm.Take(ctx, k)
			if err != nil {
				t.Error(err)
				return
			}
			if r.OK {
				mu.Lock()
				took++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took > 5 || took == 0 {
		t.Fatalf("20 concurrent requests took %d tokens of a burst of 5", took)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := storetest.Open(t, storetest.Options{Clock: clk})
	lm := &ratelimit.Limiter{Counters: st, Clock: clk}
	short := ratelimit.Key{Name: "test:short", Limit: ratelimit.Limit{Every: time.Minute, Burst: 1}}
	long := ratelimit.Key{Name: "test:long", Limit: ratelimit.Limit{Every: time.Hour, Burst: 1}}
	if _, err := lm.Take(ctx, short, long); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	n, err := st.PruneRateLimits(ctx, clk.Now())
	if err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want 1 (the refilled key)", n, err)
	}
	if _, had, _ := st.RateLimitTAT(ctx, long.Name); !had {
		t.Fatal("prune deleted a key still counting")
	}
}
