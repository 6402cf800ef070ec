package preview_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/preview"
)

// TestDigestPreviewTellsOfPostsLeftOut: a sample issue of a feed that
// posted more than a digest shows says how many it left out, as the
// issue sent would; one within the cap says nothing of the kind.
func TestDigestPreviewTellsOfPostsLeftOut(t *testing.T) {
	for _, tc := range []struct {
		posts int
		want  string // "" when no line is wanted
	}{
		{25, "and 5 more posts from The Harbour Log"},
		{20, ""},
	} {
		w := newWorld(t, preview.Limits{})
		var ps []post
		for i := range tc.posts { // all between the daily slots of March 3 and 4 in Paris
			ps = append(ps, post{i + 1, t0.Add(-5*time.Hour - time.Duration(i)*30*time.Minute), body(i + 1)})
		}
		site := newSite(t, ps...)
		res, err := w.svc.Preview(context.Background(), preview.Request{Feed: site.feedURL(), Delivery: "daily", Zone: "Europe/Paris"})
		if err != nil {
			t.Fatalf("%d posts: %v", tc.posts, err)
		}
		// The contents count every new post; the issue shows the last 20.
		count := fmt.Sprintf("(%d new posts)", tc.posts)
		if shown := strings.Count(res.Text, "\n* Post "); res.Note != "" || shown != 20 || !strings.Contains(res.Text, count) {
			t.Fatalf("%d posts: not a sample of the last day's 20 counted %s (note %q, %d shown):\n%s", tc.posts, count, res.Note, shown, res.Text)
		}
		if tc.want == "" {
			if strings.Contains(res.Text, "more post") || strings.Contains(res.HTML, "more post") {
				t.Errorf("%d posts: the sample tells of posts left out:\n%s", tc.posts, res.Text)
			}
			continue
		}
		if !strings.Contains(res.Text, tc.want) || !strings.Contains(res.HTML, tc.want+"</a>") {
			t.Errorf("%d posts: the sample lacks %q:\n%s", tc.posts, tc.want, res.Text)
		}
	}
}
