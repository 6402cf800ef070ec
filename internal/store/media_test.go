package store_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestItemMediaRoundTrip records items with and without media and reads
// them back: the media come back as written, none as the zero value.
func TestItemMediaRoundTrip(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	fx.claim(t, "w1")
	media := model.ItemMedia{
		Enclosures: []model.Enclosure{
			{URL: "https://example.com/ep1.mp3", Type: "audio/mpeg", Length: 12345678, Duration: 3723},
			{URL: "https://example.com/notes.pdf", Type: "application/pdf"},
		},
		Thumbnail:   "https://example.com/ep1.jpg",
		Description: "Notes: https://example.com/notes \"quoted\" ünïcode",
		Player:      "https://www.youtube.com/watch?v=abc123",
	}
	withMedia, plain := item("m", store.IgnoredFirstPoll), item("p", store.IgnoredFirstPoll)
	withMedia.Media = media
	if _, err := s.RecordPoll(context.Background(), "w1", fx.record([]store.NewItem{withMedia, plain}, true)); err != nil {
		t.Fatal(err)
	}
	items, err := s.ItemsOfFeed(context.Background(), fx.feed.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]model.ItemMedia{}
	for _, it := range items {
		got[it.GUID] = it.Media
	}
	if !reflect.DeepEqual(got["m"], media) {
		t.Errorf("media read back\n got %+v\nwant %+v", got["m"], media)
	}
	if !got["p"].Empty() || !reflect.DeepEqual(got["p"], model.ItemMedia{}) {
		t.Errorf("item without media read back as %+v", got["p"])
	}
	if n := count(t, s, "items", "guid = ? AND media = ''", "p"); n != 1 {
		t.Errorf("item without media stored %d rows with an empty column, want 1", n)
	}
}
