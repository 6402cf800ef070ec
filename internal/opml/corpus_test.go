package opml

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

type corpusDoc struct {
	path string // relative to corpus/opml
	body []byte
}

// loadOPMLCorpus reads every file of corpus/opml.
func loadOPMLCorpus(t testing.TB) []corpusDoc {
	t.Helper()
	var docs []corpusDoc
	for _, f := range testutil.ReadCorpus(t, "opml") {
		docs = append(docs, corpusDoc{path: strings.TrimPrefix(f.Path, "opml/"), body: f.Body})
	}
	if len(docs) == 0 {
		t.Fatal("no OPML corpus files")
	}
	return docs
}

// TestCorpus parses every file of corpus/opml: no panics, only the package's
// errors, and counts per source of how many files yield feeds.
func TestCorpus(t *testing.T) {
	type tally struct{ files, withFeeds, feeds, notOPML, noFeeds, malformed, repaired int }
	bySource := map[string]*tally{}
	for _, d := range loadOPMLCorpus(t) {
		src, _, _ := strings.Cut(d.path, "/")
		if bySource[src] == nil {
			bySource[src] = &tally{}
		}
		tl := bySource[src]
		tl.files++
		got, err := Parse(bytes.NewReader(d.body))
		switch {
		case err == nil:
			tl.withFeeds++
			tl.feeds += len(got)
			if !bytes.Equal(Repair(d.body), d.body) {
				tl.repaired++
			}
			seen := map[string]bool{}
			for _, o := range got {
				if o.XMLURL == "" || seen[o.XMLURL] {
					t.Errorf("%s: empty or repeated xmlUrl %q", d.path, o.XMLURL)
				}
				seen[o.XMLURL] = true
			}
		case errors.Is(err, ErrNotOPML):
			tl.notOPML++
		case errors.Is(err, ErrNoFeeds):
			tl.noFeeds++
		case errors.Is(err, ErrMalformed):
			tl.malformed++
			t.Logf("%s: %v", d.path, err)
		default:
			t.Errorf("%s: unexpected error %v", d.path, err)
		}
	}
	srcs := make([]string, 0, len(bySource))
	for s := range bySource {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	for _, s := range srcs {
		tl := bySource[s]
		t.Logf("%-42s files %3d  with feeds %3d (%d repaired)  feeds %5d  not OPML %2d  no feeds %2d  malformed %d",
			s, tl.files, tl.withFeeds, tl.repaired, tl.feeds, tl.notOPML, tl.noFeeds, tl.malformed)
	}
	// Every plenaryapp file is a subscription list, malformed or not.
	if p := bySource["plenaryapp-awesome-rss-feeds"]; p == nil || p.withFeeds != p.files {
		t.Errorf("plenaryapp: %+v; want feeds from every file", p)
	}
}

// TestCorpusPlenaryMalformed checks the plenaryapp files that are not
// well-formed XML (unescaped & and <): after repair, each yields as many
// feeds as it has xmlUrl attributes.
func TestCorpusPlenaryMalformed(t *testing.T) {
	repaired, quoted := 0, 0
	for _, d := range loadOPMLCorpus(t) {
		if !strings.HasPrefix(d.path, "plenaryapp-awesome-rss-feeds/") || bytes.Equal(Repair(d.body), d.body) {
			continue
		}
		repaired++
		if _, err := parseDoc(Repair(d.body)); errors.Is(err, ErrMalformed) {
			quoted++ // needed the second pass, RepairQuotes
		}
		got, err := Parse(bytes.NewReader(d.body))
		if err != nil {
			t.Errorf("%s: %v", d.path, err)
			continue
		}
		if want := distinctXMLURLs(d.body); len(got) != want {
			t.Errorf("%s: %d feeds, want %d", d.path, len(got), want)
		}
	}
	t.Logf("plenaryapp files repaired: %d (%d of them needed RepairQuotes)", repaired, quoted)
	if repaired < 22 {
		t.Errorf("only %d plenaryapp files needed repair; SOURCES.md says 22 are malformed", repaired)
	}
}

var xmlURLAttr = regexp.MustCompile(`(?i)\bxmlUrl\s*=\s*"([^"]*)"`)

func distinctXMLURLs(b []byte) int {
	seen := map[string]bool{}
	for _, m := range xmlURLAttr.FindAllSubmatch(b, -1) {
		if u := strings.TrimSpace(string(m[1])); u != "" {
			seen[u] = true
		}
	}
	return len(seen)
}

func TestCorpusGoogleReader(t *testing.T) {
	path := filepath.Join(testutil.CorpusDir(t), "opml", "google-reader-subscriptions-2008.opml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// The export has 300 feed outlines in 12 folders, but Google Reader
	// repeated a feed in every folder (label) it had: 13 appear twice, so
	// deduplication by XMLURL leaves 287 feeds.
	if n := len(xmlURLAttr.FindAll(b, -1)); n != 300 {
		t.Errorf("the file has %d xmlUrl attributes, want 300", n)
	}
	if len(got) != 287 || len(got) != distinctXMLURLs(b) {
		t.Errorf("%d feeds, want 287 distinct of 300 outlines", len(got))
	}
	folders := map[string]int{}
	for _, o := range got {
		if o.Title == "" || o.HTMLURL == "" {
			t.Errorf("incomplete outline %+v", o)
		}
		folders[o.Folder]++
	}
	t.Logf("folders: %v", folders)
	// And it survives a round trip through Write.
	var buf bytes.Buffer
	if err := Write(&buf, "export", got); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(&buf)
	if err != nil || len(again) != len(got) {
		t.Fatalf("round trip: %d outlines, %v", len(again), err)
	}
}

// listparser's test files state expectations in "Eval:" lines of their
// header comment; the cheap ones about feeds are checked here.
var (
	evalRe       = regexp.MustCompile(`(?m)^\s*Eval:\s*(.*?)\s*$`)
	evalLen      = regexp.MustCompile(`^len\(result\[['"]feeds['"]\]\) == (\d+)$`)
	evalField    = regexp.MustCompile(`^result\[['"]feeds['"]\]\[(\d+)\]\[['"](url|title)['"]\] == (['"])(.*)['"]$`)
	evalSame     = regexp.MustCompile(`^result\[['"]feeds['"]\]\[(\d+)\]\[['"]title['"]\] == result\[['"]feeds['"]\]\[(\d+)\]\[['"]title['"]\]$`)
	evalCategory = regexp.MustCompile(`^\[(.*)\] in result\[['"]feeds['"]\]\[(\d+)\]\[['"]categories['"]\]$`)
)

func TestCorpusListparserEvals(t *testing.T) {
	checked, files := 0, 0
	for _, d := range loadOPMLCorpus(t) {
		if !strings.HasPrefix(d.path, "listparser-tests/tests/files/") {
			continue
		}
		name := strings.TrimPrefix(d.path, "listparser-tests/tests/files/")
		got, err := Parse(bytes.NewReader(d.body))
		if strings.HasPrefix(name, "rdf/") {
			// RDF/FOAF blogrolls are not OPML; listparser reads them, feedmail does not.
			if !errors.Is(err, ErrNotOPML) {
				t.Errorf("%s: %v, want ErrNotOPML", name, err)
			}
			continue
		}
		files++
		feed := func(i int) (Outline, bool) {
			if i < len(got) {
				return got[i], true
			}
			t.Errorf("%s: no feed %d (have %d, err %v)", name, i, len(got), err)
			return Outline{}, false
		}
		for _, m := range evalRe.FindAllSubmatch(d.body, -1) {
			ev := string(m[1])
			switch {
			case evalLen.MatchString(ev):
				n, _ := strconv.Atoi(evalLen.FindStringSubmatch(ev)[1])
				checked++
				if len(got) != n {
					t.Errorf("%s: %d feeds (err %v); %s", name, len(got), err, ev)
				}
			case evalField.MatchString(ev):
				sm := evalField.FindStringSubmatch(ev)
				i, _ := strconv.Atoi(sm[1])
				checked++
				if o, ok := feed(i); ok {
					val := o.Title
					if sm[2] == "url" {
						val = o.XMLURL
					}
					if val != sm[4] {
						t.Errorf("%s: got %q; %s", name, val, ev)
					}
				}
			case evalSame.MatchString(ev):
				sm := evalSame.FindStringSubmatch(ev)
				i, _ := strconv.Atoi(sm[1])
				j, _ := strconv.Atoi(sm[2])
				checked++
				a, ok1 := feed(i)
				b, ok2 := feed(j)
				if ok1 && ok2 && a.Title != b.Title {
					t.Errorf("%s: titles %q and %q differ; %s", name, a.Title, b.Title, ev)
				}
			case strings.Contains(name, "/hier-") && evalCategory.MatchString(ev):
				// Folders only: categories from the category attribute are not kept.
				sm := evalCategory.FindStringSubmatch(ev)
				i, _ := strconv.Atoi(sm[2])
				var parts []string
				for _, p := range strings.Split(sm[1], ",") {
					parts = append(parts, strings.Trim(strings.TrimSpace(p), `'"`))
				}
				want := strings.Join(parts, FolderSeparator)
				o, ok := feed(i)
				if !ok {
					continue
				}
				if strings.Contains(name, "hier-4") && want != o.Folder {
					continue // ['parent', 'child'] there comes from the category attribute
				}
				checked++
				if o.Folder != want {
					t.Errorf("%s: folder %q; %s", name, o.Folder, ev)
				}
			}
		}
	}
	t.Logf("listparser OPML files: %d, expectations checked: %d", files, checked)
	if checked < 25 {
		t.Errorf("only %d expectations checked", checked)
	}
}
