package mailer

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

// TestArticleEmail: an "article" email shows the article, sanitized, its
// relative links resolved against the page it came from; without one it
// shows the feed's own content whole and one line saying so.
func TestArticleEmail(t *testing.T) {
	for _, tc := range []struct {
		name, article     string
		want, notWant     []string // in the HTML part
		wantText, textNot []string
	}{
		{name: "with the article",
			article:  `<div><p>The article own words.</p><p><img src="/img/a.jpg" alt="A"><a href="../about">about</a></p><script>evil()</script></div>`,
			want:     []string{"The article own words.", `src="https://site.example/img/a.jpg"`, `href="https://site.example/about"`},
			notWant:  []string{"evil()", "Teaser of the post", "could not be read"},
			wantText: []string{"The article own words."}, textNot: []string{ArticleMissingNote}},
		{name: "without the article",
			want:     []string{"Teaser of the post", "could not be read from the site"},
			wantText: []string{"Teaser of the post", ArticleMissingNote}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testItem()
			e.Format, e.ItemHTML = store.FormatArticle, `<p>Teaser of the post… <a href="/p">Read more</a></p>`
			e.Article, e.ArticleURL = tc.article, "https://site.example/posts/1"
			m, err := testSender().Item(e)
			if err != nil {
				t.Fatal(err)
			}
			p := renderParse(t, m)
			for _, s := range tc.want {
				if !strings.Contains(p.html, s) {
					t.Errorf("HTML part lacks %q:\n%s", s, p.html)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(p.html, s) {
					t.Errorf("HTML part has %q", s)
				}
			}
			text := strings.ReplaceAll(p.text, "\r\n", "\n")
			for _, s := range tc.wantText {
				if !strings.Contains(text, s) {
					t.Errorf("text part lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tc.textNot {
				if strings.Contains(text, s) {
					t.Errorf("text part has %q", s)
				}
			}
			if bad := malformed(p.html); len(bad) > 0 {
				t.Errorf("malformed HTML: %v", bad)
			}
		})
	}
}
