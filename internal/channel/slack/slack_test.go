package slack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/slack"
)

// A post's title becomes a mrkdwn link with Slack's control characters
// escaped; an issue lists each post under its feed.
func TestRender(t *testing.T) {
	cases := []struct {
		name string
		d    channel.Delivery
		want []string
	}{
		{"post", channel.Delivery{Post: &channel.Post{Title: "A <b> & c|d", Link: "https://a.example.org/1", Text: "Hello",
			Feed: channel.Feed{Title: "Blog"}}}, []string{"*<https://a.example.org/1|A &lt;b&gt; &amp; c¦d> — Blog*", "Hello"}},
		{"issue", channel.Delivery{Issue: &channel.Issue{Name: "Morning", Edition: "Mon 2 Mar", Feeds: []channel.IssueFeed{
			{Feed: channel.Feed{Title: "A"}, Posts: []channel.Post{{Title: "one", Link: "https://a.example.org/1"}}}}}},
			[]string{"*Morning — Mon 2 Mar*", "A:", "• <https://a.example.org/1|one>"}},
		{"issue with posts left out", channel.Delivery{Issue: &channel.Issue{Name: "Morning", Edition: "Mon 2 Mar", Feeds: []channel.IssueFeed{
			{Feed: channel.Feed{Title: "A", SiteURL: "https://a.example.org/"}, More: 5,
				Posts: []channel.Post{{Title: "one", Link: "https://a.example.org/1"}}}}}},
			[]string{"*Morning — Mon 2 Mar*", "A:", "• <https://a.example.org/1|one>", "<https://a.example.org/|and 5 more posts from A>"}},
	}
	for _, c := range cases {
		c.d.Target = channel.Target{URL: "https://hooks.example.org/services/x"}
		r, err := slack.New().Render(c.d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var m struct{ Text string }
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(m.Text, "\n"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: text %q, want %q", c.name, got, c.want)
		}
	}
}
