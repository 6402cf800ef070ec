package subscribe

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
)

// TestSubscribeControls: a request's filters and format are stored; bad
// ones are refused before anything is written; and an operator
// confirming a pending subscription with new filters gets the catch-up
// through those filters.
func TestSubscribeControls(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	bad := "/(/"
	feed := Found{URL: "https://blog.example/feed", Title: "Blog"}
	if _, err := svc.Subscribe(ctx, Request{Email: "a@example.com", Feed: feed, Controls: store.Controls{Include: &bad}}); !errors.Is(err, store.ErrBadControls) {
		t.Fatalf("bad include accepted: %v", err)
	}
	if _, err := svc.Store.UserByEmail(ctx, "a@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused request created the account: %v", err)
	}

	first, err := svc.Subscribe(ctx, Request{Email: "a@example.com", Feed: feed, ByOperator: true})
	if err != nil {
		t.Fatal(err)
	}
	svc.Clock.(*clock.Fake).Advance(time.Minute)
	now := svc.Clock.Now()
	if _, err := svc.Store.RecordPoll(ctx, "", store.PollRecord{FeedID: first.Feed.ID, At: now, Outcome: "pushed", Status: 200, Push: true,
		State: store.FeedState{PrimedAt: &now}, Items: []store.NewItem{
			{Identity: "1", Title: "Golang news", Content: "<p>x</p>"},
			{Identity: "2", Title: "Cooking", Content: "<p>y</p>"},
		}}); err != nil {
		t.Fatal(err)
	}
	include, format := "golang", "title"
	res, err := svc.Subscribe(ctx, Request{Email: "a@example.com", Feed: feed, Confirmed: true, ByOperator: true,
		Controls: store.Controls{Include: &include, Format: &format}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sub.IncludeTerms != "golang" || res.Sub.Format != store.FormatTitle || res.Sub.State != store.SubActive {
		t.Fatalf("subscription %+v", res.Sub)
	}
	var titles []string
	if err := svc.Store.DB.Table("outbox").Joins("JOIN items ON items.id = outbox.item_id").
		Where("outbox.subscription_id = ?", res.Sub.ID).Pluck("items.title", &titles).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(titles, []string{"Golang news"}) {
		t.Fatalf("catch-up emails %q, want only the post that passes", titles)
	}
}
