package filter

import (
	"strings"
	"testing"
)

func TestPass(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude string
		title, content   string
		want             bool
	}{
		{"no terms pass everything", "", "", "Anything", "<p>at all</p>", true},
		{"word in title", "golang", "", "Why Golang wins", "", true},
		{"word in content", "golang", "", "A post", "<p>We use <b>Golang</b> here.</p>", true},
		{"include misses", "rust", "", "Why Golang wins", "<p>text</p>", false},
		{"case folded", "GOLANG", "", "golang news", "", true},
		{"whole word only", "go", "", "Going home", "<p>gopher, ago, goto</p>", false},
		{"word bounded by punctuation", "go", "", "Learn Go!", "", true},
		{"word inside a longer word", "source", "", "sourcecode released", "", false},
		{"digits are word characters", "2026", "", "Plans for 20261", "", false},
		{"digits match", "v2", "", "Release v2, finally", "", true},
		{"phrase", "open source", "", "Open Source summit", "", true},
		{"phrase across punctuation", "open source", "", "an open-source tool", "", true},
		{"phrase across tags", "open source", "", "", "<p>open</p><p>source</p>", true},
		{"phrase words out of order", "open source", "", "source open", "", false},
		{"phrase split by another word", "open source", "", "open and source", "", false},
		{"inline tags join a word", "golang", "", "", "<p>go<em>lang</em></p>", true},
		{"block tags split a word", "golang", "", "", "<p>go</p><p>lang</p>", false},
		{"script text ignored", "secret", "", "", "<script>secret()</script><p>visible</p>", false},
		{"entities decoded", "café", "", "", "<p>Caf&eacute; opening</p>", true},
		{"one include of several", "rust, zig , golang", "", "golang", "", true},
		{"exclude wins", "golang", "sponsored", "Golang tips", "<p>Sponsored post</p>", false},
		{"exclude only", "", "sponsored", "Golang tips", "<p>plain</p>", true},
		{"exclude only hits", "", "sponsored", "[Sponsored] Golang tips", "", false},
		{"umlaut", "über", "", "Alles ÜBER Go", "", true},
		{"umlaut is a letter", "ber", "", "über", "", false},
		{"sharp s folds to ss", "strasse", "", "Hauptstraße 5", "", false},
		{"sharp s term, caps text", "straße", "", "HAUPT STRASSE", "", true},
		{"greek", "λόγος", "", "ΛΌΓΟΣ και", "", true},
		{"combining mark stays in the word", "cafe", "", "cafe\u0301", "", false},
		{"CJK substring", "東京", "", "東京都の天気", "", true},
		{"CJK absent", "大阪", "", "東京都の天気", "", false},
		{"CJK phrase across spaces", "東京", "", "東 京", "", true},
		{"regex", `/go(lang)?\s+1\.\d+/`, "", "Golang 1.26 released", "", true},
		{"regex case-insensitive", `/^release/`, "", "RELEASE notes", "", true},
		{"regex not whole word", `/lang/`, "", "golang", "", true},
		{"regex with comma", `/a{1,2}b/, zzz`, "", "xaab", "", true},
		{"regex in exclude", "", `/\bad\b/`, "An ad here", "", false},
		{"regex across title and text lines", `/title$/`, "", "The title", "<p>body</p>", false},
		{"regex on content text not markup", `/<p>/`, "", "", "<p>body</p>", false},
		{"empty terms and trailing commas", " , golang,, ,", "", "golang", "", true},
		{"only commas is no include", ",,,", "", "anything", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.include, tc.exclude)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := f.Pass(NewDoc(tc.title, tc.content)); got != tc.want {
				t.Errorf("Pass(%q, %q) with include %q exclude %q = %v, want %v", tc.title, tc.content, tc.include, tc.exclude, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "  a ,b,, c d ,", want: "a, b, c d"},
		{in: `/x,y/ , z`, want: `/x,y/, z`},
		{in: `/a/b/,c`, want: `/a/b/, c`},
		{in: `/(/`, err: "invalid regular expression /(/: missing closing )"},
		{in: `ok, /[a/`, err: "invalid regular expression /[a/: missing closing ]"},
		{in: `//`, err: "empty regular expression //"},
		{in: `/unclosed`, want: `/unclosed`}, // a word, not a regexp
		{in: "!!!", err: `term "!!!" has no letter or digit`},
		{in: strings.Repeat("a", MaxTermLen+1), err: "characters long (at most 200)"},
		{in: strings.Repeat("w,", MaxTerms+1), err: "more than 50 terms"},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse(%q) error is not one line: %q", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), tc.want)
		}
		again, err := Parse(got.String())
		if err != nil || again.String() != got.String() {
			t.Errorf("canonical form %q does not parse back: %q, %v", got.String(), again.String(), err)
		}
	}
}

// A regexp that backtracks exponentially elsewhere is linear in RE2: the
// test finishes, and the answer is right.
func TestHostileRegexp(t *testing.T) {
	f, err := New(`/(a+)+$/`, `/(a|aa)+b/`)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 100_000)
	// Past NewDoc's cap: the terms themselves on the whole text.
	if f.Include.matchAny(Doc{text: long + "!"}) {
		t.Error("(a+)+$ matched a's followed by !")
	}
	if !f.Include.matchAny(Doc{text: long}) {
		t.Error("(a+)+$ did not match a's")
	}
	if f.Exclude.matchAny(Doc{text: long}) {
		t.Error("(a|aa)+b matched a's without b")
	}
	if !f.Pass(NewDoc("", long)) {
		t.Error("a post of a's should pass")
	}
}

func TestTextCapped(t *testing.T) {
	f, err := New("needle", "")
	if err != nil {
		t.Fatal(err)
	}
	far := "<p>" + strings.Repeat("hay ", MaxText/4) + "needle</p>"
	if f.Pass(NewDoc("", far)) {
		t.Error("a word past MaxText matched")
	}
	if !f.Pass(NewDoc("", "<p>hay needle</p>")) {
		t.Error("a near word did not match")
	}
	if d := NewDoc(strings.Repeat("é", MaxText), "x"); len(d.text) > MaxText+1 {
		t.Errorf("text is %d bytes, cap %d", len(d.text), MaxText)
	}
}
