package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// BenchmarkFanOutFiltered records polls of 20 new items to a feed with
// 500 instant subscribers, none or 25 of them with filters, so the Go
// pass can be compared with the statements alone.
func BenchmarkFanOutFiltered(b *testing.B) {
	for _, filtered := range []int{0, 25} {
		b.Run(fmt.Sprintf("filtered=%d", filtered), func(b *testing.B) {
			clk := clock.NewFake(pollT0)
			s := storetest.Open(b, storetest.Options{Clock: clk})
			ctx := context.Background()
			fx := newPollFixture(b, s, clk, "https://example.com/feed", 500, 0, false)
			include := "golang, /rust(acean)?s?/, open source"
			for _, sub := range fx.instant[:filtered] {
				var owner store.Subscription
				if err := s.DB.Take(&owner, sub).Error; err != nil {
					b.Fatal(err)
				}
				if _, err := s.SetSubscriptionControls(ctx, owner.UserID, sub, store.Controls{Include: &include}); err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for b.Loop() {
				var items []store.NewItem
				for range 20 {
					n++
					items = append(items, post(fmt.Sprint(n), fmt.Sprintf("Post %d about golang", n),
						"<p>Some text of the post, a few words long, with no term in it.</p>"))
				}
				fx.claim(b, "w1")
				if _, err := s.RecordPoll(ctx, "w1", fx.record(items, true)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
