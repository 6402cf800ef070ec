package store_test

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

func TestFingerprint(t *testing.T) {
	base := store.Fingerprint("Title", "<p>Body</p>", store.ItemMedia{})
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not 16 bytes of lower-case hex", base)
	}
	if again := store.Fingerprint("Title", "<p>Body</p>", store.ItemMedia{}); again != base {
		t.Fatalf("not stable: %q then %q", base, again)
	}
	for _, tc := range []struct {
		name, title, content string
		media                store.ItemMedia
	}{
		{"title changed", "Title!", "<p>Body</p>", store.ItemMedia{}},
		{"content changed", "Title", "<p>Body.</p>", store.ItemMedia{}},
		{"text moved from content to title", "Title<p>", "Body</p>", store.ItemMedia{}},
		{"media added", "Title", "<p>Body</p>", store.ItemMedia{Thumbnail: "https://example.com/t.png"}},
		{"enclosure added", "Title", "<p>Body</p>", store.ItemMedia{Enclosures: []store.Enclosure{{URL: "https://example.com/a.mp3"}}}},
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
			_ = store.Fingerprint("Post number "+string(rune('a'+i)), content, store.ItemMedia{})
		}
	}
}
