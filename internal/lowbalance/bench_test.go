package lowbalance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// BenchmarkPass measures the running-low pass: b.N readers with 1,000
// credits, each with 5 instant subscriptions among 50 feeds of 30 dated
// posts, every line due (none below it: no notices).
// The figure is per reader (ns/op): the forecast's share of a pass.
//
//	go test -run - -bench Pass -benchtime 2000x ./internal/lowbalance/
func BenchmarkPass(b *testing.B) {
	clk := clock.NewFake(t0)
	s := storetest.Open(b, storetest.Options{Clock: clk})
	ctx := context.Background()
	var feeds []int64
	for i := range 50 {
		f, _, err := s.EnsureFeed(ctx, fmt.Sprintf("https://bench.example/%d/feed", i))
		if err != nil {
			b.Fatal(err)
		}
		var items []store.Item
		for d := range 30 {
			pub := t0.Add(-time.Duration(d+1) * 24 * time.Hour)
			items = append(items, store.Item{FeedID: f.ID, Identity: fmt.Sprintf("p%d", d), Title: "p", PublishedAt: &pub, SeenAt: pub})
		}
		if err := s.DB.CreateInBatches(&items, 100).Error; err != nil {
			b.Fatal(err)
		}
		feeds = append(feeds, f.ID)
	}
	for i := range b.N {
		u, _, err := s.EnsureUser(ctx, fmt.Sprintf("r%d@bench.example", i))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, 1000, fmt.Sprintf("seed:%d", i), "bench"); err != nil {
			b.Fatal(err)
		}
		for k := range 5 {
			if _, err := s.Subscribe(ctx, u.ID, feeds[(i*7+k)%len(feeds)], nil, true); err != nil {
				b.Fatal(err)
			}
		}
	}
	p, err := New(Config{Store: s, History: storedHistory(s, clk), Clock: clk, Log: quiet(), Batch: DefaultBatch})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	done := 0
	for done < b.N {
		n, err := p.RunOnce(ctx)
		if err != nil || n == 0 {
			b.Fatalf("pass after %d of %d lines: %d, %v", done, b.N, n, err)
		}
		done += n
	}
}
