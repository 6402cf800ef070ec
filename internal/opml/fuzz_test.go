package opml

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// fuzzSeedDirs are the corpus/opml folders FuzzParse takes seeds from (the
// first few files of each, in name order).
var fuzzSeedDirs = []string{
	"plenaryapp-awesome-rss-feeds/recommended/without_category",
	"listparser-tests/tests/files/malformed",
	"listparser-tests/tests/files/opml",
	"listparser-tests/tests/files/opml/categories",
	"feedvalidator-opml/errors",
	"feedvalidator-opml/clean",
}

// FuzzParse checks that Parse never panics, returns only the package's
// errors, never more than MaxFeeds feeds, no empty or repeated XMLURL,
// and that whatever it returns survives Write and Parse unchanged in number.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<opml version="2.0"><body><outline text="a & b" xmlUrl="https://a/?x=1&y=2"/></body></opml>`))
	f.Add([]byte(`<opml><body><outline text="x" description="say "hi" <b>" xmlUrl="https://b/"/>`))
	root := filepath.Join(testutil.CorpusDir(f), "opml")
	for _, dir := range fuzzSeedDirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			f.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for i, name := range names {
			if i >= 6 {
				break
			}
			b, err := os.ReadFile(filepath.Join(root, dir, name))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := Parse(bytes.NewReader(doc))
		if err != nil {
			if !errors.Is(err, ErrNotOPML) && !errors.Is(err, ErrNoFeeds) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxFeeds {
			t.Fatalf("%d outlines without error", len(got))
		}
		seen := map[string]bool{}
		for _, o := range got {
			if o.XMLURL == "" || seen[o.XMLURL] {
				t.Fatalf("empty or repeated xmlUrl %q", o.XMLURL)
			}
			seen[o.XMLURL] = true
		}
		var buf bytes.Buffer
		if err := Write(&buf, "fuzz", got); err != nil {
			t.Fatalf("Write: %v", err)
		}
		again, err := Parse(&buf)
		if err != nil || len(again) != len(got) {
			t.Fatalf("round trip: %d → %d outlines, %v\n%s", len(got), len(again), err, buf.Bytes())
		}
	})
}
