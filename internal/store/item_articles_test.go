package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestItemArticleClaims: asking twice makes one row; a claimed article is
// not handed out again while its lease runs, only its holder settles or
// defers it, a settled article is never claimed again, and a lease that
// ran out hands the article to another worker.
func TestItemArticleClaims(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, "https://news.example/feed.xml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, id := range []string{"a", "b"} {
		it := store.Item{FeedID: f.ID, Identity: id, Link: "https://news.example/" + id, SeenAt: clk.Now()}
		if err := s.DB.Create(&it).Error; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	for range 2 {
		if err := s.WantArticles(ctx, append(ids, ids[0])); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.ClaimArticles(ctx, "w1", time.Minute, clk.Now(), 10)
	if err != nil || len(claimed) != 2 || claimed[0].Link != "https://news.example/a" || claimed[0].FeedURL != f.URL {
		t.Fatalf("first claim = %+v, %v; want both items once, with their links", claimed, err)
	}
	if again, err := s.ClaimArticles(ctx, "w2", time.Minute, clk.Now(), 10); err != nil || len(again) != 0 {
		t.Fatalf("claim during the lease = %+v, %v", again, err)
	}
	if ok, err := s.SaveArticle(ctx, "w2", store.ItemArticle{ItemID: ids[0], HTML: "<p>x</p>"}); ok || err != nil {
		t.Fatalf("a non-holder saved the article: %v, %v", ok, err)
	}
	if ok, err := s.SaveArticle(ctx, "w1", store.ItemArticle{ItemID: ids[0], URL: "https://news.example/a", HTML: "<p>x</p>", TextChars: 1}); !ok || err != nil {
		t.Fatalf("the holder could not save: %v, %v", ok, err)
	}
	if ok, err := s.DeferArticle(ctx, "w1", ids[1], clk.Now().Add(30*time.Second)); !ok || err != nil {
		t.Fatalf("the holder could not defer: %v, %v", ok, err)
	}
	arts, err := s.ItemArticles(ctx, ids)
	if err != nil || arts[ids[0]].State != store.ArticleReady || arts[ids[1]].State != store.ArticlePending {
		t.Fatalf("articles = %+v, %v", arts, err)
	}
	clk.Advance(30 * time.Second)
	claimed, err = s.ClaimArticles(ctx, "w2", time.Minute, clk.Now(), 10)
	if err != nil || len(claimed) != 1 || claimed[0].ItemID != ids[1] {
		t.Fatalf("claim after the deferral = %+v, %v; want the pending one only", claimed, err)
	}
	clk.Advance(2 * time.Minute) // w2 died holding it
	claimed, err = s.ClaimArticles(ctx, "w3", time.Minute, clk.Now(), 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim after the lease ran out = %+v, %v", claimed, err)
	}
	if ok, _ := s.SaveArticle(ctx, "w2", store.ItemArticle{ItemID: ids[1], Reason: "late"}); ok {
		t.Fatal("a worker whose lease ran out settled the article")
	}
}

// BenchmarkClaimArticlesIdle measures the poller's article pass when no
// subscription wants articles: one indexed read.
func BenchmarkClaimArticlesIdle(b *testing.B) {
	s := storetest.Open(b, storetest.Options{})
	ctx := context.Background()
	for b.Loop() {
		if jobs, err := s.ClaimArticles(ctx, "w", time.Minute, time.Now(), 8); err != nil || len(jobs) != 0 {
			b.Fatal(jobs, err)
		}
	}
}
