package mailer

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// TestItemFormats: each format shows what it promises in both parts, and
// the HTML stays well formed.
func TestItemFormats(t *testing.T) {
	long := strings.Repeat("word ", 100)
	tests := []struct {
		format           string
		html             string
		want, notWant    []string // in the text part
		htmlNot          []string // absent from the HTML part
		wantOpenPostLink bool
	}{
		{format: store.FormatFull, html: `<p>First paragraph.</p><p><img src="/a.png" alt="A picture"></p>`,
			want: []string{"First paragraph.", "[A picture]", "Read on the site:"}},
		{format: "", html: `<p>Empty format is full.</p>`, want: []string{"Empty format is full."}},
		{format: store.FormatSummary, html: `<p>Lead <b>text</b>.</p><p><img src="/a.png" alt="A picture"></p><p>` + long + `</p>`,
			want: []string{"Lead text. " + strings.TrimSpace(strings.Repeat("word ", SummaryWords-2)) + "…", "Read on the site:",
				"ep.mp3"},
			notWant: []string{"[A picture]", strings.Repeat("word ", SummaryWords)}, htmlNot: []string{"<img"}},
		{format: store.FormatTitle, html: `<p>Body that must not show.</p>`,
			want:    []string{"Hello, world", "https://blog.example.com/posts/hello", "ep.mp3"},
			notWant: []string{"Body that must not show"}, htmlNot: []string{"Body that must not show", "<img"}},
	}
	for _, tc := range tests {
		t.Run("format="+tc.format, func(t *testing.T) {
			e := testItem()
			e.Format, e.ItemHTML = tc.format, tc.html
			if tc.format != store.FormatFull && tc.format != "" {
				e.Media = model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://blog.example.com/ep.mp3", Type: "audio/mpeg"}}}
			}
			m, err := testSender().Item(e)
			if err != nil {
				t.Fatal(err)
			}
			p := renderParse(t, m)
			text := strings.ReplaceAll(p.text, "\r\n", "\n")
			for _, s := range tc.want {
				if !strings.Contains(text, s) {
					t.Errorf("text part lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(text, s) {
					t.Errorf("text part has %q:\n%s", s, text)
				}
			}
			for _, s := range tc.htmlNot {
				if strings.Contains(p.html, s) {
					t.Errorf("HTML part has %q", s)
				}
			}
			if bad := malformed(p.html); len(bad) > 0 {
				t.Errorf("malformed HTML: %v", bad)
			}
			if p.get("Subject") != "Hello, world" {
				t.Errorf("subject %q", p.get("Subject"))
			}
		})
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		html string
		n    int
		want string
	}{
		{"", 3, ""},
		{"<p>one two</p>", 3, "one two"},
		{"<p>one two three</p>", 3, "one two three"},
		{"<p>one, two, three, four</p>", 3, "one, two, three…"},
		{"<p>a<br>b</p><script>no()</script>", 5, "a b"},
	}
	for _, tc := range tests {
		if got := Summary(tc.html, tc.n); got != tc.want {
			t.Errorf("Summary(%q, %d) = %q, want %q", tc.html, tc.n, got, tc.want)
		}
	}
}
