package opml

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []Outline
	}{
		{
			name: "flat list",
			doc: `<?xml version="1.0"?><opml version="2.0"><head><title>x</title></head><body>
				<outline text="One" title="Eins" type="rss" xmlUrl="https://one.example/feed" htmlUrl="https://one.example/"/>
				<outline title="Two" type="rss" xmlUrl=" https://two.example/feed "/>
				</body></opml>`,
			want: []Outline{
				{Title: "One", XMLURL: "https://one.example/feed", HTMLURL: "https://one.example/"},
				{Title: "Two", XMLURL: "https://two.example/feed"},
			},
		},
		{
			name: "nested folders flattened",
			doc: `<opml version="1.0"><body>
				<outline text=" Tech ">
					<outline text="Go">
						<outline text="Go blog" xmlUrl="https://go.dev/blog/feed.atom"/>
					</outline>
					<outline text="HN" xmlUrl="https://news.example/rss"/>
				</outline>
				<outline title="Empty folder"/>
				<outline text="Top" xmlUrl="https://top.example/"/>
				</body></opml>`,
			want: []Outline{
				{Title: "Go blog", XMLURL: "https://go.dev/blog/feed.atom", Folder: "Tech / Go"},
				{Title: "HN", XMLURL: "https://news.example/rss", Folder: "Tech"},
				{Title: "Top", XMLURL: "https://top.example/"},
			},
		},
		{
			name: "xmlUrl capitalisation and dedup",
			doc: `<opml><body>
				<outline text="a" xmlURL="https://a/"/>
				<outline text="b" XMLURL="https://b/"/>
				<outline text="c" xmlurl="https://c/"/>
				<outline text="a again" xmlUrl="https://a/"/>
				<outline text="link" type="link" url="https://not-a-feed/"/>
				<outline text="empty" xmlUrl="  "/>
				</body></opml>`,
			want: []Outline{
				{Title: "a", XMLURL: "https://a/"},
				{Title: "b", XMLURL: "https://b/"},
				{Title: "c", XMLURL: "https://c/"},
			},
		},
		{
			name: "unescaped ampersand and less-than",
			doc: `<opml version="1.0"><body>
				<outline text="News & Views <live>" title="x" xmlUrl="https://x.example/rss?a=1&b=2"/>
				<outline text="AT&amp;T &amp; &#169; &aelig;" xmlUrl="https://y.example/"/>
				</body></opml>`,
			want: []Outline{
				{Title: "News & Views <live>", XMLURL: "https://x.example/rss?a=1&b=2"},
				{Title: "AT&T & © æ", XMLURL: "https://y.example/"},
			},
		},
		{
			name: "unescaped quotes and markup inside attribute values",
			doc: `<?xml version='1.0' encoding='UTF-8' ?><opml version="1.0"><head><title>x</title></head><body>
				<outline text="From Head To Toe" description="A blog by Jen "From Head To Toe" that shows" xmlUrl="http://a.example/feed" type="rss" />
				<outline text="Saket" description="Works at <a href="https://square.example/">Square</a> & <a href='https://cash.example'>Cash</a>." xmlUrl="https://saket.example/feed/" type="rss" />
				<outline text="Plain" xmlUrl="https://plain.example/" />
				</body></opml>`,
			want: []Outline{
				{Title: "From Head To Toe", XMLURL: "http://a.example/feed"},
				{Title: "Saket", XMLURL: "https://saket.example/feed/"},
				{Title: "Plain", XMLURL: "https://plain.example/"},
			},
		},
		{
			name: "concatenated documents and junk after the root",
			doc: `<opml><body><outline text="a" xmlUrl="https://a/"/></body></opml>
				<opml><body><outline text="b" xmlUrl="https://b/"/></body></opml></junk>`,
			want: []Outline{{Title: "a", XMLURL: "https://a/"}, {Title: "b", XMLURL: "https://b/"}},
		},
		{
			name: "liferea subscription list is not a feed",
			doc:  `<opml><body><outline text="list" type="Source" xmlUrl="https://l/"/><outline text="f" type="pie" xmlUrl="https://f/"/></body></opml>`,
			want: []Outline{{Title: "f", XMLURL: "https://f/"}},
		},
		{
			name: "cut short",
			doc:  `<opml version="2.0"><body><outline text="a" xmlUrl="https://a/"/>`,
			want: []Outline{{Title: "a", XMLURL: "https://a/"}},
		},
		{
			name: "blank text falls back to title",
			doc:  `<opml><body><outline text="  " title=" T " xmlUrl="https://t/"/></body></opml>`,
			want: []Outline{{Title: "T", XMLURL: "https://t/"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestParseEncodings(t *testing.T) {
	const src = `<?xml version="1.0" encoding="%s"?><opml version="2.0"><body><outline text="Café" xmlUrl="https://c/"/></body></opml>`
	latin1, _ := charmap.ISO8859_1.NewEncoder().String(fmt.Sprintf(src, "iso-8859-1"))
	utf16, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(fmt.Sprintf(src, "utf-16"))
	for name, doc := range map[string]string{"iso-8859-1": latin1, "utf-16": utf16} {
		got, err := Parse(strings.NewReader(doc))
		if err != nil || len(got) != 1 || got[0].Title != "Café" {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want error
	}{
		{"empty", "", ErrNotOPML},
		{"html", `<!DOCTYPE html><html><body>hi</body></html>`, ErrNotOPML},
		{"rss", `<rss version="2.0"><channel/></rss>`, ErrNotOPML},
		{"json", `{"opml": true}`, ErrNotOPML},
		{"text", `just text`, ErrNotOPML},
		{"no feeds", `<opml version="2.0"><head/><body><outline text="folder"/></body></opml>`, ErrNoFeeds},
		{"no body", `<opml version="2.0"><head><title>t</title></head></opml>`, ErrNoFeeds},
		{"too many feeds", "<opml><body>" + feedOutlines(MaxFeeds+1, "") + "</body></opml>", ErrTooLarge},
		{"too many elements", "<opml><body>" + strings.Repeat(`<outline text="x"/>`, MaxElements) + "</body></opml>", ErrTooLarge},
		{"nested too deep", "<opml><body>" + strings.Repeat(`<outline text="x">`, MaxDepth) + feedOutlines(1, "") +
			strings.Repeat(`</outline>`, MaxDepth) + "</body></opml>", ErrTooLarge},
		{"too many bytes", "<opml><body>" + strings.Repeat(" ", MaxBytes) + "</body></opml>", ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.doc))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %+v, %v; want %v", got, err, tt.want)
			}
		})
	}
	t.Run("reader error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := Parse(iotest.ErrReader(boom)); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("too many feeds says how many", func(t *testing.T) {
		doc := "<opml><body>" + feedOutlines(MaxFeeds+5, "") + feedOutlines(3, "") + "</body></opml>"
		_, err := Parse(strings.NewReader(doc))
		var tm *TooManyFeedsError
		if !errors.As(err, &tm) || tm.Feeds != MaxFeeds+5 || tm.Limit != MaxFeeds ||
			!strings.Contains(err.Error(), fmt.Sprint(MaxFeeds+5)) || !strings.Contains(err.Error(), fmt.Sprint(MaxFeeds)) {
			t.Fatalf("err = %v; want a TooManyFeedsError naming %d feeds and the limit %d", err, MaxFeeds+5, MaxFeeds)
		}
	})
}

// feedOutlines is n feed outlines (https://e/0 …), each in a folder of
// its own when folder is not "" (folders and feeds alike are outlines).
func feedOutlines(n int, folder string) string {
	var b strings.Builder
	for i := range n {
		if folder != "" {
			fmt.Fprintf(&b, `<outline text="%s %d">`, folder, i)
		}
		fmt.Fprintf(&b, `<outline xmlUrl="https://e/%d"/>`, i)
		if folder != "" {
			b.WriteString(`</outline>`)
		}
	}
	return b.String()
}

// TestParseMaxFeeds: a list of MaxFeeds feeds is read whole, even when
// its folders make it twice as many outlines, and so is a hostile-looking
// one just inside MaxElements and MaxDepth.
func TestParseMaxFeeds(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		wantFeeds int
	}{
		{"exactly MaxFeeds", "<opml><body>" + feedOutlines(MaxFeeds, "") + "</body></opml>", MaxFeeds},
		{"MaxFeeds, each in a folder", "<opml><body>" + feedOutlines(MaxFeeds, "Folder") + "</body></opml>", MaxFeeds},
		{"MaxFeeds repeated", "<opml><body>" + feedOutlines(MaxFeeds, "") + feedOutlines(MaxFeeds, "") + "</body></opml>", MaxFeeds},
		{"MaxDepth", "<opml><body>" + strings.Repeat(`<outline text="x">`, MaxDepth-3) + feedOutlines(1, "") +
			strings.Repeat(`</outline>`, MaxDepth-3) + "</body></opml>", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.doc))
			if err != nil || len(got) != tt.wantFeeds {
				t.Fatalf("%d feeds, %v; want %d", len(got), err, tt.wantFeeds)
			}
		})
	}
}

func TestRepair(t *testing.T) {
	tests := []struct{ in, want string }{
		{`<a b="x&y"/>`, `<a b="x&amp;y"/>`},
		{`<a b="x<y"/>`, `<a b="x&lt;y"/>`},
		{`<a b='q"<'/>`, `<a b='q"&lt;'/>`},
		{`<a>Tom & Jerry</a>`, `<a>Tom &amp; Jerry</a>`},
		{`<a>1 < 2</a>`, `<a>1 &lt; 2</a>`},
		{`<a>&amp; &lt; &#38; &#x26; &eacute;</a>`, `<a>&amp; &lt; &#38; &#x26; &eacute;</a>`},
		{`<a>&#; &#x; &# &unterminated</a>`, `<a>&amp;#; &amp;#x; &amp;# &amp;unterminated</a>`},
		{`<!-- a & b < c --><a/>`, `<!-- a & b < c --><a/>`},
		{`<a><![CDATA[a & b < c]]></a>`, `<a><![CDATA[a & b < c]]></a>`},
		{`<?xml version="1.0"?><!DOCTYPE opml><a/>`, `<?xml version="1.0"?><!DOCTYPE opml><a/>`},
		{`<a></a>`, `<a></a>`},
		{`trailing &`, `trailing &amp;`},
		{`trailing <`, `trailing &lt;`},
	}
	quoteTests := []struct{ in, want string }{
		{`<o d="Jen "Toe" blog" x="1"/>`, `<o d="Jen &quot;Toe&quot; blog" x="1"/>`},
		{`<o d='it's' x='1'/>`, `<o d='it&apos;s' x='1'/>`},
		{`<o d="at <a href="https://s/">S</a>." x="1"/>`, `<o d="at &lt;a href=&quot;https://s/&quot;>S&lt;/a>." x="1"/>`},
		{`<o a="1" b = "2" />` + "\n<p/>", `<o a="1" b = "2" />` + "\n<p/>"},
		{`<a b="c">`, `<a b="c">`},
	}
	for _, tt := range quoteTests {
		if got := string(RepairQuotes([]byte(tt.in))); got != tt.want {
			t.Errorf("RepairQuotes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range tests {
		if got := string(Repair([]byte(tt.in))); got != tt.want {
			t.Errorf("Repair(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	wellFormed := []byte(`<opml version="2.0"><body><outline text="a &amp; b" xmlUrl="https://x/?a=1&amp;b=2"/></body></opml>`)
	if got := Repair(wellFormed); &got[0] != &wellFormed[0] {
		t.Error("Repair copied a document that needed no repair")
	}
}

func TestWriteRoundTrip(t *testing.T) {
	in := []Outline{
		{Title: "Top & <first>", XMLURL: "https://a.example/feed?x=1&y=2", HTMLURL: "https://a.example/"},
		{Title: "Go blog", XMLURL: "https://go.dev/blog/feed.atom", Folder: "Tech / Go"},
		{Title: "", XMLURL: "https://untitled.example/rss", Folder: "Tech / Go"},
		{Title: "Quotes \"double\" and 'single'", XMLURL: "https://q.example/", Folder: "Misc"},
		{Title: "Ünïcödé ✓", XMLURL: "https://u.example/ü"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, "Subscriptions of a@example.com", in); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out := buf.String()
	for _, want := range []string{`<?xml version="1.0" encoding="UTF-8"?>`, `<opml version="2.0">`, `<title>Subscriptions of a@example.com</title>`, `text=""`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(got, in) {
		t.Errorf("round trip\n got %+v\nwant %+v", got, in)
	}
}

func TestWriteGroupsFolders(t *testing.T) {
	in := []Outline{
		{Title: "a", XMLURL: "https://a/", Folder: "F"},
		{Title: "b", XMLURL: "https://b/"},
		{Title: "c", XMLURL: "https://c/", Folder: "F"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, "t", in); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Outline{in[0], in[2], in[1]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestWriteErrors(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "t", []Outline{{Title: "x"}}); !errors.Is(err, ErrInvalidOutline) {
		t.Errorf("empty XMLURL: %v", err)
	}
	boom := errors.New("boom")
	if err := Write(failWriter{boom}, "t", []Outline{{XMLURL: "https://x/"}}); !errors.Is(err, boom) {
		t.Errorf("writer error: %v", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, "empty", nil); err != nil {
		t.Errorf("empty list: %v", err)
	}
	if _, err := Parse(&buf); !errors.Is(err, ErrNoFeeds) {
		t.Errorf("parsing an empty list: %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }
