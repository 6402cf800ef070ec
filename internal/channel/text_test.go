package channel_test

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel"
)

// TestLinesTellOfPostsLeftOut: an issue's feed whose posts the cap cut
// ends with how many, linked to its site (else its feed); a feed within
// the cap ends with its last post.
func TestLinesTellOfPostsLeftOut(t *testing.T) {
	link := func(title, url string) string { return "[" + title + "](" + url + ")" }
	for _, tc := range []struct {
		name string
		feed channel.Feed
		more int
		want string
	}{
		{"five", channel.Feed{Title: "Blog", URL: "https://b.example/feed", SiteURL: "https://b.example/"}, 5,
			"[and 5 more posts from Blog](https://b.example/)"},
		{"one", channel.Feed{Title: "Blog", URL: "https://b.example/feed", SiteURL: "https://b.example/"}, 1,
			"[and 1 more post from Blog](https://b.example/)"},
		{"no site", channel.Feed{URL: "https://b.example/feed"}, 2,
			"[and 2 more posts from https://b.example/feed](https://b.example/feed)"},
		{"site not http", channel.Feed{Title: "Blog", URL: "https://b.example/feed", SiteURL: "javascript:alert(1)"}, 3,
			"[and 3 more posts from Blog](https://b.example/feed)"},
		{"none", channel.Feed{Title: "Blog", URL: "https://b.example/feed"}, 0, "• [one](https://b.example/1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := channel.Delivery{Issue: &channel.Issue{Name: "Morning", Edition: "Mon 2 Mar", Feeds: []channel.IssueFeed{
				{Feed: tc.feed, More: tc.more, Posts: []channel.Post{{Title: "one", Link: "https://b.example/1"}}}}}}
			lines := channel.Lines(d, 0, link)
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("last line %q, want %q (all: %q)", got, tc.want, strings.Join(lines, " | "))
			}
		})
	}
}
