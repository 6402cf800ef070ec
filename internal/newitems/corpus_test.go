package newitems

import (
	"bytes"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// corpusFile is one third-party test document with what its header comment
// says about it.
type corpusFile struct {
	path        string // relative to the corpus folder
	body        []byte
	contentType string // from a "Header: Content-type: …" line, if any
	location    string // from a "Header: Content-Location: …" line, if any
	description string
	expect      string
}

var (
	headerRe = regexp.MustCompile(`(?m)^\s*Header:\s*([A-Za-z-]+):\s*(.*?)\s*$`)
	descRe   = regexp.MustCompile(`(?m)^\s*Description:\s*(.*?)\s*$`)
	expectRe = regexp.MustCompile(`(?m)^\s*Expect:\s*(.*?)\s*$`)
)

// loadCorpus reads every file under the given folders of the corpus. The
// header comments are read from the document as decoded by Decode, so that
// those of UTF-16/32 files are found too.
func loadCorpus(t testing.TB, dirs ...string) []corpusFile {
	t.Helper()
	var files []corpusFile
	for _, dir := range dirs {
		for _, f := range testutil.ReadCorpus(t, dir) {
			files = append(files, describeCorpusFile(f))
		}
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files under %v", dirs)
	}
	return files
}

// describeCorpusFile reads a corpus file's header comments.
func describeCorpusFile(f testutil.CorpusFile) corpusFile {
	cf := corpusFile{path: f.Path, body: f.Body}
	text, _ := Decode(f.Body, "")
	head := text
	if len(head) > 4096 {
		head = head[:4096]
	}
	for _, m := range headerRe.FindAllSubmatch(head, -1) {
		switch strings.ToLower(string(m[1])) {
		case "content-type":
			cf.contentType = string(m[2])
		case "content-location":
			cf.location = string(m[2])
		}
	}
	if m := descRe.FindSubmatch(head); m != nil {
		cf.description = string(m[1])
	}
	if m := expectRe.FindSubmatch(head); m != nil {
		cf.expect = string(m[1])
	}
	return cf
}

// isWideUnicode reports whether a document is UTF-16 or UTF-32, by byte
// order mark or by the zero bytes of its first characters.
func isWideUnicode(b []byte) bool {
	enc, _ := sniffUnicode(b)
	return enc != nil && !bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF})
}

// corpusGroup names the folder a corpus file is counted under in logs:
// the first three path elements (feedparser/tests/encoding), or fewer.
func corpusGroup(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 3 {
		parts = parts[:3]
	}
	if len(parts) > 1 && strings.Contains(parts[len(parts)-1], ".") {
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, "/")
}

// TestCorpusParse puts every feed document of the corpus through Decode and
// Parse: no panics, always valid UTF-8 out of Decode, never more than
// MaxItems items, and every item with an identity. Errors are expected for
// the ill-formed ones; they are counted and logged.
func TestCorpusParse(t *testing.T) {
	files := loadCorpus(t, "feedparser/tests", "feedvalidator/testcases", "jsonfeed")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type tally struct{ files, parsed, notFeed, invalid, items int }
	byDir := map[string]*tally{}
	var total tally
	errKinds := map[string]int{}
	for _, cf := range files {
		dir := corpusGroup(cf.path)
		if byDir[dir] == nil {
			byDir[dir] = &tally{}
		}
		tl := byDir[dir]
		tl.files++
		total.files++

		doc, err := Decode(cf.body, cf.contentType)
		if err != nil {
			t.Errorf("%s: Decode: %v", cf.path, err)
			continue
		}
		if !utf8.Valid(doc) {
			t.Errorf("%s: Decode returned invalid UTF-8", cf.path)
		}
		feedURL := cf.location
		if feedURL == "" {
			feedURL = "http://corpus.example/" + cf.path
		}
		f, err := Parse(cf.body, cf.contentType, feedURL)
		switch {
		case errors.Is(err, ErrNotAFeed):
			tl.notFeed++
			total.notFeed++
			continue
		case errors.Is(err, ErrInvalidFeed):
			tl.invalid++
			total.invalid++
			msg := err.Error()
			if len(msg) > 90 {
				msg = msg[:90]
			}
			errKinds[msg]++
			continue
		case err != nil:
			t.Errorf("%s: error is neither ErrNotAFeed nor ErrInvalidFeed: %v", cf.path, err)
			continue
		}
		tl.parsed++
		total.parsed++
		tl.items += len(f.Items)
		total.items += len(f.Items)
		if len(f.Items) > MaxItems || f.ItemsSeen < len(f.Items) {
			t.Errorf("%s: %d items, %d seen", cf.path, len(f.Items), f.ItemsSeen)
		}
		for _, it := range f.Items {
			if len(it.Identity) != 64 {
				t.Errorf("%s: identity %q", cf.path, it.Identity)
			}
		}
		Select(f.Items, f.Items, now.Add(-24*time.Hour), now)
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		tl := byDir[d]
		t.Logf("%-36s files %4d  parsed %4d  not a feed %4d  invalid %4d  items %5d", d, tl.files, tl.parsed, tl.notFeed, tl.invalid, tl.items)
	}
	t.Logf("%-36s files %4d  parsed %4d  not a feed %4d  invalid %4d  items %5d", "TOTAL", total.files, total.parsed, total.notFeed, total.invalid, total.items)
	kinds := make([]string, 0, len(errKinds))
	for k := range errKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("invalid x%d: %s", errKinds[k], k)
	}
}

// TestCorpusWideUnicode checks that every UTF-16 and UTF-32 document of the
// corpus (found by byte order mark or by the zero bytes of its first
// characters) parses, and that its title comes out as in its UTF-8 twin.
func TestCorpusWideUnicode(t *testing.T) {
	files := loadCorpus(t, "feedparser/tests", "feedvalidator/testcases", "jsonfeed")
	n := 0
	for _, cf := range files {
		if !isWideUnicode(cf.body) {
			continue
		}
		n++
		t.Run(cf.path, func(t *testing.T) {
			f, err := Parse(cf.body, cf.contentType, "http://corpus.example/")
			if err != nil {
				t.Fatalf("Parse: %v (description %q)", err, cf.description)
			}
			doc, _ := Decode(cf.body, cf.contentType)
			if !bytes.Contains(doc, []byte("Description:")) {
				t.Errorf("decoded document lost its header comment: %.80q", doc)
			}
			if enc := xmlDeclEncoding(doc); enc != "" && enc != "UTF-8" {
				t.Errorf("declaration still says %q", enc)
			}
			if f.ItemsSeen != len(f.Items) {
				t.Errorf("%d items seen, %d kept", f.ItemsSeen, len(f.Items))
			}
		})
	}
	t.Logf("UTF-16/32 documents: %d", n)
	if n < 16 { // feedparser/tests/encoding holds 16 (8 UTF-16, 8 UTF-32)
		t.Errorf("found only %d UTF-16/32 documents; the corpus has 16", n)
	}
}

// pyString decodes the simple Python string literals of Expect: lines
// ('…' with \uXXXX, \xXX, \\, \' and \" escapes). ok is false for anything else.
func pyString(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return "", false
	}
	s := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 'u', 'x':
			w := 4
			if s[i] == 'x' {
				w = 2
			}
			if i+1+w > len(s) {
				return "", false
			}
			r, err := strconv.ParseUint(s[i+1:i+1+w], 16, 32)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(r))
			i += w
		default:
			return "", false
		}
	}
	return b.String(), true
}

// titleSkips are title expectations gofeed does not meet by design.
var titleSkips = map[string]string{
	"feedparser/tests/wellformed/atom/atom_namespace_2.xml": "Atom root in an unknown namespace",
	"feedparser/tests/wellformed/atom/atom_namespace_3.xml": "Atom root in an unknown namespace",
	"feedparser/tests/wellformed/atom/atom_namespace_4.xml": "Atom root in an unknown namespace",
	"feedparser/tests/wellformed/atom/atom_namespace_5.xml": "Atom root in an unknown namespace",
	"feedparser/tests/wellformed/cdf/channel_title.xml":     "CDF is not a format gofeed reads",
	"feedparser/tests/wellformed/cdf/item_title.xml":        "CDF is not a format gofeed reads",
}

var titleExpectRe = regexp.MustCompile(`^not bozo and (feed|entries\[0\])\['title'\] == ('.*')$`)

// TestCorpusTitles spot-checks titles against the Expect: lines of the
// well-formed feedparser cases that name one. feedparser keeps markup in
// titles and sanitizes it, feedmail decodes entities and keeps text, so only
// expectations of plain text (no markup, no entities) are compared; the
// sanitizer cases are left out for the same reason.
func TestCorpusTitles(t *testing.T) {
	files := loadCorpus(t, "feedparser/tests/wellformed", "feedparser/tests/encoding")
	checked := 0
	for _, cf := range files {
		if strings.Contains(cf.path, "/sanitize/") || titleSkips[cf.path] != "" {
			continue
		}
		m := titleExpectRe.FindStringSubmatch(cf.expect)
		if m == nil {
			continue
		}
		want, ok := pyString(m[2])
		if !ok || strings.ContainsAny(want, "<>&") {
			continue
		}
		checked++
		t.Run(cf.path, func(t *testing.T) {
			f, err := Parse(cf.body, cf.contentType, "http://corpus.example/")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got string
			if m[1] == "feed" {
				got = f.Title
			} else {
				if len(f.Items) == 0 {
					t.Fatalf("no items; want first title %q", want)
				}
				got = f.Items[0].Title
			}
			if got != cleanTitle(want) {
				t.Errorf("title = %q, want %q (Expect: %s)", got, want, cf.expect)
			}
		})
	}
	t.Logf("titles checked: %d", checked)
	if checked < 30 {
		t.Errorf("only %d titles checked", checked)
	}
}
