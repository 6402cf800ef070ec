package mailer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// TestDigestTellsOfPostsLeftOut: a feed whose posts the per-feed cap cut
// ends, in both parts, with how many were left out, linked to its site
// (else its feed); a feed within the cap says nothing of the kind. The
// channel view of the issue carries the same count, and the subject and
// the feed's count in the contents count every new post, not only those
// shown.
func TestDigestTellsOfPostsLeftOut(t *testing.T) {
	const feedURL = "https://a.example.com/feed.xml"
	for _, tc := range []struct {
		name     string
		more     int
		site     string
		wantLine string // "" when no line is wanted
		wantLink string
	}{
		{"five left out", 5, "https://a.example.com/", "and 5 more posts from Blog A", "https://a.example.com/"},
		{"one left out", 1, "https://a.example.com/", "and 1 more post from Blog A", "https://a.example.com/"},
		{"no site", 5, "", "and 5 more posts from Blog A", feedURL},
		{"none left out", 0, "https://a.example.com/", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &store.IssueContent{
				Issue:  store.DigestIssue{ID: 7, SlotAt: testDate},
				Digest: store.Digest{Name: "Morning", Schedule: "0 7 * * *", Timezone: "UTC"},
				Feeds: []store.IssueFeed{{FeedID: 1, Title: "Blog A", URL: feedURL, SiteURL: tc.site,
					Items: cappedItems(DefaultPerFeed), More: tc.more}},
			}
			s := testSender()
			m, err := s.Digest(DigestEmailOf(c, "reader@example.org", s, links.Links{}, testDate))
			if err != nil {
				t.Fatal(err)
			}
			p := renderParse(t, m)
			if is := IssueOf(c); is.Feeds[0].More != tc.more {
				t.Errorf("channel view carries More %d, want %d", is.Feeds[0].More, tc.more)
			}
			total := fmt.Sprintf("%d new posts", DefaultPerFeed+tc.more)
			if !strings.Contains(p.text, "- Blog A ("+total+")") {
				t.Errorf("text part lacks the count of every new post (%s):\n%s", total, p.text)
			}
			if subj := m.GetGenHeader("Subject"); len(subj) != 1 || !strings.HasSuffix(subj[0], ": "+total+" from 1 feed") {
				t.Errorf("subject %q does not count every new post (%s from 1 feed)", subj, total)
			}
			if tc.wantLine == "" {
				if strings.Contains(p.html, "more post") || strings.Contains(p.text, "more post") {
					t.Errorf("a feed within the cap tells of posts left out:\n%s", p.text)
				}
				return
			}
			if want := tc.wantLine + ": " + tc.wantLink; !strings.Contains(p.text, want) {
				t.Errorf("text part lacks %q:\n%s", want, p.text)
			}
			if want := `<a href="` + tc.wantLink + `"`; !strings.Contains(p.html, want+` target="_blank" rel="noopener noreferrer" style="color:#0969da;">`+tc.wantLine+`</a>`) {
				t.Errorf("HTML lacks %q linked to %s:\n%s", tc.wantLine, tc.wantLink, p.html)
			}
			if last, line := strings.LastIndex(p.text, "* Post 0"), strings.Index(p.text, tc.wantLine); line < last {
				t.Errorf("the line comes before the feed's last post:\n%s", p.text)
			}
		})
	}
}

// cappedItems returns n items, newest first, as DigestIssueContent gives
// them.
func cappedItems(n int) []store.Item {
	out := make([]store.Item, n)
	for i := range out {
		pub := testDate.Add(-time.Duration(i) * time.Hour)
		out[i] = store.Item{ID: int64(n - i), Title: fmt.Sprintf("Post %d", n-1-i), Link: fmt.Sprintf("https://a.example.com/%d", i),
			PublishedAt: &pub, SeenAt: pub}
	}
	return out
}
