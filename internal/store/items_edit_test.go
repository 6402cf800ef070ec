package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestFingerprint(t *testing.T) {
	base := store.Fingerprint("Title", "<p>Body</p>", model.ItemMedia{})
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not 16 bytes of lower-case hex", base)
	}
	if again := store.Fingerprint("Title", "<p>Body</p>", model.ItemMedia{}); again != base {
		t.Fatalf("not stable: %q then %q", base, again)
	}
	for _, tc := range []struct {
		name, title, content string
		media                model.ItemMedia
	}{
		{"title changed", "Title!", "<p>Body</p>", model.ItemMedia{}},
		{"content changed", "Title", "<p>Body.</p>", model.ItemMedia{}},
		{"text moved from content to title", "Title<p>", "Body</p>", model.ItemMedia{}},
		{"media added", "Title", "<p>Body</p>", model.ItemMedia{Thumbnail: "https://example.com/t.png"}},
		{"enclosure added", "Title", "<p>Body</p>", model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://example.com/a.mp3"}}}},
	} {
		if got := store.Fingerprint(tc.title, tc.content, tc.media); got == base {
			t.Errorf("%s: same fingerprint", tc.name)
		}
	}
}

// BenchmarkFingerprint20Items fingerprints the 20 items of a poll with
// ≈2 KB of content each, as a poll of a changed feed does for the items it
// already knows: compare with newitems' BenchmarkParse20Items.
func BenchmarkFingerprint20Items(b *testing.B) {
	content := strings.Repeat("<p>"+strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 7)+"</p>\n", 5)
	b.ReportAllocs()
	for b.Loop() {
		for i := range 20 {
			_ = store.Fingerprint("Post number "+string(rune('a'+i)), content, model.ItemMedia{})
		}
	}
}

// TestEditedItemAfterItsEmail: an edit of a post whose instant email went
// out updates the item and mails nothing again; a fill (an item stored
// without a fingerprint) writes the fingerprint only and is no edit.
func TestEditedItemAfterItsEmail(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 1, false)
	a, b := item("a", ""), item("b", "")
	fx.poll(t, a, b)
	var row store.OutboxRow
	if err := s.DB.Where("subscription_id = ?", fx.instant[0]).Order("id").First(&row).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&row).Update("state", store.OutboxSent).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&store.Item{}).Where("identity = ?", b.Identity).Update("content_hash", "").Error; err != nil {
		t.Fatal(err)
	}
	edit := func(it store.NewItem, title string, fill bool) store.ItemEdit {
		h := store.Fingerprint(title, it.Content, it.Media)
		return store.ItemEdit{Identity: it.Identity, Title: title, Content: it.Content, ContentHash: h, Fill: fill}
	}
	rec := fx.record(nil, true)
	rec.Edits = []store.ItemEdit{edit(a, "Post a, corrected", false), edit(b, b.Title, true)}
	fx.claim(t, "w1")
	out, err := s.RecordPoll(ctx, "w1", rec)
	if err != nil {
		t.Fatal(err)
	}
	if out.Edited != 1 || out.Emails != 0 || out.DigestItems != 0 {
		t.Fatalf("outcome %+v; want 1 edit, nothing queued", out)
	}
	var items []store.Item
	if err := s.DB.Where("feed_id = ?", fx.feed.ID).Order("identity").Find(&items).Error; err != nil {
		t.Fatal(err)
	}
	if items[0].Title != "Post a, corrected" || items[0].ContentHash != rec.Edits[0].ContentHash {
		t.Errorf("edited item %+v", items[0])
	}
	if items[1].Title != b.Title || items[1].ContentHash != rec.Edits[1].ContentHash {
		t.Errorf("filled item %+v", items[1])
	}
	if n := count(t, s, "outbox", "1 = 1"); n != 2 {
		t.Errorf("%d outbox rows, want the 2 of the first poll", n)
	}
	// The same edit again changes nothing.
	fx.claim(t, "w1")
	if out, err := s.RecordPoll(ctx, "w1", rec); err != nil || out.Edited != 0 {
		t.Errorf("repeated edit: %+v, %v", out, err)
	}
	if got := fmt.Sprint(items[0].ContentHash != "" && len(items[0].ContentHash) == 32); got != "true" {
		t.Errorf("fingerprint %q is not 16 bytes of hex", items[0].ContentHash)
	}
}

// TestEditedItemBeforeItsEmail: an instant email queued and not sent yet
// is built from the item as it is when it goes out: the edited version.
func TestEditedItemBeforeItsEmail(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	a := item("a", "")
	fx.poll(t, a)
	rec := fx.record(nil, true)
	rec.Edits = []store.ItemEdit{{Identity: a.Identity, Title: "Post a, corrected", Content: "<p>new</p>",
		ContentHash: store.Fingerprint("Post a, corrected", "<p>new</p>", model.ItemMedia{})}}
	fx.claim(t, "w1")
	if out, err := s.RecordPoll(ctx, "w1", rec); err != nil || out.Edited != 1 || out.Emails != 0 {
		t.Fatalf("edit: %+v, %v", out, err)
	}
	var rows []*store.OutboxRow
	if err := s.DB.Where("subscription_id = ?", fx.instant[0]).Find(&rows).Error; err != nil || len(rows) != 1 {
		t.Fatalf("outbox rows %v, %v; want the one queued", rows, err)
	}
	dels, err := s.ItemDeliveries(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	if d := dels[rows[0].ID]; d.Item == nil || d.Item.Title != "Post a, corrected" || d.Item.Content != "<p>new</p>" {
		t.Fatalf("the queued email would be built from %+v; want the edited item", d.Item)
	}
}
