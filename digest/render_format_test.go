package digest_test

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// TestEmailFormats: a feed whose subscription asked for titles shows no
// excerpt and no thumbnail in the digest; the others keep theirs.
func TestEmailFormats(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	it := store.Item{ID: 1, Title: "Post", Link: "https://a.example.com/1", Content: "<p>Some text.</p>", SeenAt: now}
	video := store.Item{ID: 2, Title: "Video", Link: "https://a.example.com/2", SeenAt: now,
		Media: store.ItemMedia{Thumbnail: "https://a.example.com/t.jpg", Description: "About it"}}
	c := &store.IssueContent{Digest: store.Digest{ID: 1, UserID: 1, Name: "Morning", Schedule: "@daily", Timezone: "UTC"},
		Issue: store.DigestIssue{ID: 1, SlotAt: now}}
	for _, f := range []string{store.FormatFull, store.FormatSummary, store.FormatTitle} {
		c.Feeds = append(c.Feeds, store.IssueFeed{FeedID: int64(len(c.Feeds) + 1), Title: f, URL: "https://a.example.com/feed",
			Format: f, Items: []store.Item{it, video}})
	}
	signer, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.Links{Base: "https://feedmail.example.com", Domain: "feedmail.example.com", Tokens: signer}
	e := mailer.DigestEmailOf(c, "reader@example.org", mailer.Sender{Address: "feedmail@mail.example.com"}, l, now)
	for _, f := range e.Feeds {
		titles := f.Title == store.FormatTitle
		for _, di := range f.Items {
			if empty := di.ExcerptHTML == "" && di.Thumbnail == ""; empty != titles {
				t.Errorf("feed with format %s, item %s: excerpt %q thumbnail %q", f.Title, di.Title, di.ExcerptHTML, di.Thumbnail)
			}
		}
	}
}
