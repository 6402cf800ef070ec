package digest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// TestEmailFormats: a feed whose subscription asked for titles shows no
// excerpt and no thumbnail in the digest; the others keep theirs.
func TestEmailFormats(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	it := store.Item{ID: 1, Title: "Post", Link: "https://a.example.com/1", Content: "<p>Some text.</p>", SeenAt: now}
	video := store.Item{ID: 2, Title: "Video", Link: "https://a.example.com/2", SeenAt: now,
		Media: model.ItemMedia{Thumbnail: "https://a.example.com/t.jpg", Description: "About it"}}
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

// TestEmailDatesAndThumbnails: a digest dates its posts in its own time
// zone (an issue of Fri 27 Nov in Paris does not date a post of 23:40 UTC
// the day before), and shows every entry's thumbnail at the one digest
// size, a video's with a play mark and a link saying where it plays.
func TestEmailDatesAndThumbnails(t *testing.T) {
	slot := time.Date(2026, 11, 26, 23, 35, 0, 0, time.UTC) // Fri 27 Nov 00:35 in Paris
	posted := time.Date(2026, 11, 26, 23, 10, 0, 0, time.UTC)
	text := store.Item{ID: 1, Title: "Post", Link: "https://a.example.com/1", Content: "<p>Some text about the garden.</p>", SeenAt: slot, PublishedAt: &posted,
		Media: model.ItemMedia{Thumbnail: "https://a.example.com/1.jpg"}}
	video := store.Item{ID: 2, Title: "Video", Link: "https://www.youtube.com/watch?v=abc", SeenAt: slot, PublishedAt: &posted,
		Media: model.ItemMedia{Thumbnail: "https://i.ytimg.com/vi/abc/hqdefault.jpg", Description: "About it", Player: "https://www.youtube.com/watch?v=abc"}}
	c := &store.IssueContent{Digest: store.Digest{ID: 1, UserID: 1, Name: "Night", Schedule: "35 0 * * *", Timezone: "Europe/Paris"},
		Issue: store.DigestIssue{ID: 1, SlotAt: slot},
		Feeds: []store.IssueFeed{{FeedID: 1, Title: "A", URL: "https://a.example.com/feed", Format: store.FormatFull, Items: []store.Item{text, video}}}}
	signer, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.Links{Base: "https://feedmail.example.com", Domain: "feedmail.example.com", Tokens: signer}
	s := mailer.Sender{Address: "feedmail@mail.example.com"}
	e := mailer.DigestEmailOf(c, "reader@example.org", s, l, slot)
	if e.Edition != "Fri 27 Nov" {
		t.Errorf("edition %q", e.Edition)
	}
	m, err := s.Digest(e)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := mailer.Render(m)
	if err != nil {
		t.Fatal(err)
	}
	txt, htmlPart := testutil.MailParts(t, raw)
	if strings.Contains(txt, "November 26") || strings.Count(txt, "November 27, 2026") != 2 {
		t.Errorf("posts not dated November 27 in Paris:\n%s", txt)
	}
	if n := strings.Count(htmlPart, "<img "); n != 2 || strings.Count(htmlPart, ` width="160" style="display:block;width:160px;max-width:100%;`) != 2 {
		t.Errorf("%d images, want 2 both 160 px wide:\n%s", n, htmlPart)
	}
	if strings.Count(htmlPart, "▶\ufe0e Play") != 1 || !strings.Contains(txt, "Watch on YouTube: https://www.youtube.com/watch?v=abc") {
		t.Errorf("the video has no play mark or no Watch on YouTube link:\n%s", txt)
	}
}
