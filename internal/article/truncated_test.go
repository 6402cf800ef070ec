package article

import (
	"strings"
	"testing"
)

func TestCutShort(t *testing.T) {
	long := strings.Repeat("Words of a whole post go on and on. ", 60)
	for _, tc := range []struct {
		name string
		s    Sample
		want string
	}{
		{"ellipsis", Sample{Content: "<p>The first two sentences of the post. And then…</p>"}, "an ellipsis"},
		{"three dots in brackets", Sample{Content: "<p>The first two sentences [...]</p>"}, "an ellipsis"},
		{"read more link", Sample{Content: `<p>A teaser.</p><p><a href="/p">Read more</a></p>`}, "a “read more” link"},
		{"continue reading link with arrow", Sample{Content: `<p>A teaser. <a href="/p">Continue reading →</a></p>`}, "a “read more” link"},
		{"read more without a link", Sample{Content: `<p>A teaser. Read more</p>`}, "a “read more” link"},
		{"french", Sample{Content: `<p>Un début. <a href="/p">Lire la suite</a></p>`}, "a “read more” link"},
		{"much shorter than the page", Sample{Content: "<p>" + strings.Repeat("word ", 40) + "</p>", ArticleChars: 5000}, "much shorter than the page"},
		{"whole post", Sample{Content: "<p>" + long + "</p>"}, ""},
		{"long post ending in an ellipsis", Sample{Content: "<p>" + long + "and so on…</p>"}, ""},
		{"whole post with a link in the middle", Sample{Content: `<p>See <a href="/x">more</a> of it.</p><p>` + long + `</p>`}, ""},
		{"article about as long as the content", Sample{Content: "<p>" + long + "</p>", ArticleChars: len(long) + 100}, ""},
		{"script text ignored", Sample{Content: `<p>Done.</p><script>var a = "..."</script>`}, ""},
		{"empty", Sample{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cutShort(tc.s); got != tc.want {
				t.Errorf("cutShort(%.60q) = %q, want %q", tc.s.Content, got, tc.want)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	teaser := Sample{Content: "<p>The start of it…</p>"}
	whole := Sample{Content: "<p>" + strings.Repeat("A whole post. ", 200) + "</p>"}
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    bool
		cut     int
	}{
		{"no posts", nil, false, 0},
		{"one teaser is not enough to tell", []Sample{teaser}, false, 1},
		{"two teasers", []Sample{teaser, teaser}, true, 2},
		{"most are teasers", []Sample{teaser, teaser, whole}, true, 2},
		{"half are teasers", []Sample{teaser, whole}, false, 1},
		{"whole posts", []Sample{whole, whole, whole}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Truncated(tc.samples)
			if v.Truncated != tc.want || v.CutShort != tc.cut || v.Looked != len(tc.samples) {
				t.Fatalf("Truncated = %+v, want truncated %v with %d of %d cut short", v, tc.want, tc.cut, len(tc.samples))
			}
			if v.Truncated != (v.Reason != "") {
				t.Errorf("reason %q does not match the verdict %v", v.Reason, v.Truncated)
			}
		})
	}
}
