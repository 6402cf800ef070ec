package newitems

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

const salvageRSSHead = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0">
<channel>
<title>Cut</title>
<link>https://example.com/</link>
`

// rssItems returns n complete RSS items with guids g1…gn.
func rssItems(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("<item><title>Post " + strconv.Itoa(i) + "</title><guid>g" + strconv.Itoa(i) + "</guid><description>Body " + strconv.Itoa(i) + "</description></item>\n")
	}
	return b.String()
}

func TestSalvageTruncated(t *testing.T) {
	atomHead := `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<title>Cut Atom</title>
<entry><title>One</title><id>urn:1</id><updated>2024-01-01T00:00:00Z</updated></entry>
<entry><title>Two</title><id>urn:2</id><updated>2024-01-02T00:00:00Z</updated></entry>
`
	rdfHead := `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="https://example.com/"><title>RDF</title><link>https://example.com/</link></channel>
<item rdf:about="https://example.com/1"><title>One</title><link>https://example.com/1</link></item>
`
	cases := []struct {
		name     string
		doc      string
		guids    []string // wanted item GUIDs; nil: an ErrInvalidFeed
		cutShort int
	}{
		{"rss cut inside the third item's title text", salvageRSSHead + rssItems(2) + "<item><title>Post th", []string{"g1", "g2"}, 1},
		{"rss cut inside a start tag", salvageRSSHead + rssItems(3) + "<item><tit", []string{"g1", "g2", "g3"}, 1},
		{"rss cut between two elements of an item", salvageRSSHead + rssItems(1) + "<item><title>Two</title><guid>g2</guid>", []string{"g1"}, 1},
		{"rss cut inside an end tag of the item", salvageRSSHead + rssItems(1) + "<item><title>Two</title><guid>g2</guid></it", []string{"g1"}, 1},
		{"rss cut right after an item end tag", salvageRSSHead + rssItems(3), []string{"g1", "g2", "g3"}, 0},
		{"rss cut after </channel>", salvageRSSHead + rssItems(2) + "</channel>\n", []string{"g1", "g2"}, 0},
		{"rss cut inside CDATA holding </item>", salvageRSSHead + rssItems(1) +
			"<item><guid>g2</guid><description><![CDATA[<p>a</p></item><item><guid>fake</guid></item> and mo", []string{"g1"}, 1},
		{"rss cut after a CDATA holding </item>", salvageRSSHead + rssItems(1) +
			"<item><guid>g2</guid><description><![CDATA[x</item>]]></description>", []string{"g1"}, 1},
		{"rss cut inside a comment holding </item>", salvageRSSHead + rssItems(2) + "<item><guid>g3</guid><!-- </item> ", []string{"g1", "g2"}, 1},
		{"rss cut inside escaped content", salvageRSSHead + rssItems(1) + "<item><guid>g2</guid><description>&lt;/item&gt; &lt;p", []string{"g1"}, 1},
		{"rss cut inside an attribute value", salvageRSSHead + rssItems(2) + `<item><guid isPermaLink="fa`, []string{"g1", "g2"}, 1},
		{"atom cut inside an entry", atomHead + "<entry><title>Three</title><id>urn:3", []string{"urn:1", "urn:2"}, 1},
		{"atom cut after an entry", atomHead, []string{"urn:1", "urn:2"}, 0},
		{"rss 1.0 with a prefixed root", rdfHead + "<item><title>Tw", []string{""}, 1},
		{"no complete item", salvageRSSHead + "<item><title>Only one</title><guid>g1</gu", nil, 0},
		{"cut in the channel head", salvageRSSHead[:60], nil, 0},
		{"items nested in an unclosed element do not count", salvageRSSHead + "<description>" + rssItems(2), nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse([]byte(c.doc), "application/rss+xml", "https://example.com/feed")
			if c.guids == nil {
				if !errors.Is(err, ErrInvalidFeed) {
					t.Fatalf("Parse = %v, %v; want ErrInvalidFeed", f, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, it := range f.Items {
				got = append(got, it.GUID)
			}
			if strings.Join(got, ",") != strings.Join(c.guids, ",") {
				t.Errorf("items %q, want %q", got, c.guids)
			}
			w := f.Warning
			if w == nil || w.Kind != WarnTruncated {
				t.Fatalf("warning %+v, want WarnTruncated", w)
			}
			if w.ItemMarkup != len(c.guids) || w.CutShort != c.cutShort || w.Line == 0 {
				t.Errorf("warning %+v: want %d items, %d cut short", w, len(c.guids), c.cutShort)
			}
			want := "after " + plural(len(c.guids), "complete item", "complete items") + " without its closing tags (truncated?): " +
				plural(len(c.guids), "item", "items") + " kept"
			if !strings.Contains(w.Text, want) || strings.Contains(w.Text, "cut short") != (c.cutShort > 0) {
				t.Errorf("warning text %q, want it to hold %q and cut short only if %d > 0", w.Text, want, c.cutShort)
			}
		})
	}
}

func TestSalvageTruncatedClosesWhatIsOpen(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`<rss><channel><item>a</item><item>b`, `<rss><channel><item>a</item></channel></rss>`},
		{`<rdf:RDF x="1"><item>a</item><item>b`, `<rdf:RDF x="1"><item>a</item></rdf:RDF>`},
		{"<feed\nxmlns='http://www.w3.org/2005/Atom'><entry/><entry>", "<feed\nxmlns='http://www.w3.org/2005/Atom'><entry/></feed>"},
	}
	for _, c := range cases {
		got, _, ok := salvageTruncated([]byte(c.doc))
		if !ok || string(got) != c.want {
			t.Errorf("salvageTruncated(%q) = %q, %v; want %q", c.doc, got, ok, c.want)
		}
	}
	for _, doc := range []string{
		`<rss><channel><item>a</item></channel></rss>`,     // complete: nothing to salvage
		`<rss><channel><item>a</item></channel></rss></x>`, // a syntax error, not an early end
		`<rss><channel><item>a`,                            // no complete item
	} {
		if got, _, ok := salvageTruncated([]byte(doc)); ok {
			t.Errorf("salvageTruncated(%q) = %q, want nothing", doc, got)
		}
	}
}

func TestUnseenItemsWarning(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		// want: substrings of the warning; nil means no warning
		want  []string
		count int
	}{
		{"unclosed title swallows the items", salvageRSSHead + "<description>About\n" + rssItems(12) + "</channel></rss>",
			[]string{"the document has 12 <item> elements but the parser found none", "<description> element opened on line 6", "swallows them"}, 12},
		{"unclosed element on its own", salvageRSSHead + "<foo>\n" + rssItems(1) + "</channel></rss>",
			[]string{"1 <item> element", "<foo> element opened on line 6", "(line 7)", "swallows it"}, 1},
		{"items in a foreign namespace", salvageRSSHead + `<x:item xmlns:x="https://example.org/ns"><title>a</title></x:item>` + "</channel></rss>",
			[]string{"1 <x:item> element", `namespace "https://example.org/ns"`}, 1},
		{"items in an atom feed", `<feed xmlns="http://www.w3.org/2005/Atom"><title>x</title><item><title>a</title></item></feed>`,
			[]string{"1 <item> element", "the items of an Atom <feed> are <entry> elements"}, 1},
		{"empty rss feed", salvageRSSHead + "</channel></rss>", nil, 0},
		{"empty atom feed", `<feed xmlns="http://www.w3.org/2005/Atom"><title>Nothing yet</title></feed>`, nil, 0},
		{"item markup only as text", salvageRSSHead + "<description><![CDATA[<item>x</item>]]> &lt;item&gt;</description><!-- <item/> --></channel></rss>", nil, 0},
		{"empty json feed", `{"version":"https://jsonfeed.org/version/1.1","title":"x","items":[]}`, nil, 0},
		{"sound rss feed", salvageRSSHead + rssItems(2) + "</channel></rss>", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse([]byte(c.doc), "", "https://example.com/feed")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.want == nil {
				if f.Warning != nil {
					t.Fatalf("warning %+v on a sound document", f.Warning)
				}
				return
			}
			if len(f.Items) != 0 {
				t.Fatalf("%d items; the case expects the parser to find none", len(f.Items))
			}
			w := f.Warning
			if w == nil || w.Kind != WarnItemsUnseen || w.ItemMarkup != c.count {
				t.Fatalf("warning %+v, want WarnItemsUnseen with %d items", w, c.count)
			}
			for _, s := range c.want {
				if !strings.Contains(w.Text, s) {
					t.Errorf("warning %q lacks %q", w.Text, s)
				}
			}
		})
	}
}

func TestUnseenItemsWarningText(t *testing.T) {
	cases := []struct {
		m    itemMarkup
		want string
	}{
		{itemMarkup{}, ""},
		{itemMarkup{count: 3, name: "entry", line: 9},
			"the document has 3 <entry> elements but the parser found none (first at line 9)"},
		{itemMarkup{count: 2, name: "item", line: 9, swallower: &openElement{raw: "title", line: 4}},
			"the document has 2 <item> elements but the parser found none: the <title> element opened on line 4 is not closed before the first <item> (line 9), so it swallows them"},
		{itemMarkup{count: 1, name: "entry", line: 3, space: "http://example.com/old-atom"},
			`the document has 1 <entry> element but the parser found none: it is in the namespace "http://example.com/old-atom", which is not RSS's or Atom's`},
	}
	for _, c := range cases {
		w := unseenItemsWarning(c.m)
		got := ""
		if w != nil {
			got = w.Text
		}
		if got != c.want {
			t.Errorf("unseenItemsWarning(%+v) = %q, want %q", c.m, got, c.want)
		}
	}
}
