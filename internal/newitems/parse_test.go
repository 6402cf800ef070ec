package newitems

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

const rssFeed = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel>
  <title>  Example &amp;amp; Co
    Blog </title>
  <link>/</link>
  <language>en-gb</language>
  <managingEditor>editor@example.com (Ed Itor)</managingEditor>
  <atom:link rel="self" href="https://example.com/feed.xml" type="application/rss+xml"/>
  <atom:link rel="hub" href="https://hub.example.net/"/>
  <item>
    <title>First &amp;#8220;post&amp;#8221;</title>
    <link>/2024/first</link>
    <guid isPermaLink="false">tag:example.com,2024:1</guid>
    <description>Short &lt;b&gt;summary&lt;/b&gt;</description>
    <content:encoded><![CDATA[<p>Full <a href="/x">content</a></p>]]></content:encoded>
    <pubDate>Tue, 02 Jan 2024 10:00:00 +0100</pubDate>
    <dc:creator>Alice</dc:creator>
  </item>
  <item>
    <title>Permalink guid</title>
    <guid>https://example.com/2024/second</guid>
    <description>Only a description</description>
    <dc:date>2024-01-03T00:00:00Z</dc:date>
  </item>
  <item>
    <title>No guid, no link</title>
    <description>Body</description>
  </item>
  <item>
    <title>Not a permalink</title>
    <guid isPermaLink="false">https://example.com/not-a-link</guid>
  </item>
  <item>
    <title>Bad link</title>
    <link>javascript:alert(1)</link>
  </item>
</channel>
</rss>`

const atomFeed = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://blog.example.org/sub/">
  <title type="html">Atom &lt;3 Blog</title>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <link href="./"/>
  <link rel="self" href="atom.xml"/>
  <link rel="hub" href="https://pubsubhubbub.example.com/"/>
  <author><name>Feed Author</name></author>
  <updated>2024-02-01T12:00:00Z</updated>
  <entry>
    <title>Entry one</title>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <link href="2024/entry-one"/>
    <updated>2024-02-01T12:00:00Z</updated>
    <published>2024-01-31T08:30:00-05:00</published>
    <summary>Summary one</summary>
    <content type="html">&lt;p&gt;Content one&lt;/p&gt;</content>
  </entry>
  <entry>
    <title>Entry two</title>
    <id>urn:uuid:2</id>
    <link rel="alternate" href="https://elsewhere.example/two"/>
    <updated>2024-02-02T00:00:00Z</updated>
    <summary>Only a summary</summary>
    <author><name>Bob</name></author>
  </entry>
</feed>`

const jsonFeed = `{
  "version": "https://jsonfeed.org/version/1.1",
  "title": "JSON Blog",
  "home_page_url": "https://json.example/",
  "feed_url": "https://json.example/feed.json",
  "language": "de",
  "hubs": [{"type": "rssCloud", "url": "https://cloud.example/"}, {"type": "WebSub", "url": "https://websub.example/hub"}],
  "authors": [{"name": "Jay Son"}],
  "items": [
    {"id": "1", "url": "https://json.example/1", "title": "HTML item", "content_html": "<p>Hi</p>", "summary": "Sum", "date_published": "2024-03-01T10:00:00+02:00"},
    {"id": 2, "url": "/2", "title": "Text item", "content_text": "a < b\nnext line", "date_modified": "2024-03-02T10:00:00Z"},
    {"id": "3", "summary": "only <summary>"}
  ]
}`

func TestParseRSS(t *testing.T) {
	f, err := Parse([]byte(rssFeed), "application/rss+xml", "https://example.com/feed.xml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Title != "Example & Co Blog" {
		t.Errorf("Title = %q", f.Title)
	}
	if f.SiteURL != "https://example.com/" || f.SelfURL != "https://example.com/feed.xml" || f.HubURL != "https://hub.example.net/" {
		t.Errorf("SiteURL, SelfURL, HubURL = %q, %q, %q", f.SiteURL, f.SelfURL, f.HubURL)
	}
	if f.Language != "en-gb" || f.ItemsSeen != 5 || len(f.Items) != 5 {
		t.Errorf("Language %q, ItemsSeen %d, %d items", f.Language, f.ItemsSeen, len(f.Items))
	}
	first := f.Items[0]
	want := Item{
		Identity:    itemIdentity("tag:example.com,2024:1", "", "", ""),
		GUID:        "tag:example.com,2024:1",
		Link:        "https://example.com/2024/first",
		Title:       "First \u201cpost\u201d",
		ContentHTML: `<p>Full <a href="/x">content</a></p>`,
		Summary:     "Short <b>summary</b>",
		Author:      "Alice",
		Published:   time.Date(2024, 1, 2, 9, 0, 0, 0, time.UTC),
	}
	if !reflect.DeepEqual(first, want) {
		t.Errorf("first item\n got %+v\nwant %+v", first, want)
	}
	second := f.Items[1]
	if second.Link != "https://example.com/2024/second" {
		t.Errorf("permalink guid not used as link: %q", second.Link)
	}
	if second.ContentHTML != "Only a description" || second.Summary != "Only a description" {
		t.Errorf("description fallback: %+v", second)
	}
	if !second.Published.Equal(time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("dc:date: %v", second.Published)
	}
	if second.Author != "Ed Itor" && second.Author != "editor@example.com" {
		t.Errorf("feed author fallback: %q", second.Author)
	}
	third := f.Items[2]
	if third.GUID != "" || third.Link != "" || third.Identity != itemIdentity("", "", "No guid, no link", "Body") {
		t.Errorf("title+content identity: %+v", third)
	}
	if !third.Published.IsZero() {
		t.Errorf("undated item has date %v", third.Published)
	}
	if f.Items[3].Link != "" {
		t.Errorf("isPermaLink=false guid used as link: %q", f.Items[3].Link)
	}
	if f.Items[4].Link != "" {
		t.Errorf("javascript: link kept: %q", f.Items[4].Link)
	}
}

func TestParseAtom(t *testing.T) {
	f, err := Parse([]byte(atomFeed), "application/atom+xml", "https://blog.example.org/sub/atom.xml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Title != "Atom <3 Blog" || f.SiteURL != "https://blog.example.org/sub/" {
		t.Errorf("Title %q SiteURL %q", f.Title, f.SiteURL)
	}
	if f.SelfURL != "https://blog.example.org/sub/atom.xml" || f.HubURL != "https://pubsubhubbub.example.com/" {
		t.Errorf("SelfURL %q HubURL %q", f.SelfURL, f.HubURL)
	}
	if len(f.Items) != 2 {
		t.Fatalf("%d items", len(f.Items))
	}
	one, two := f.Items[0], f.Items[1]
	if one.Link != "https://blog.example.org/sub/2024/entry-one" {
		t.Errorf("xml:base link: %q", one.Link)
	}
	if one.ContentHTML != "<p>Content one</p>" || one.Summary != "Summary one" || one.Author != "Feed Author" {
		t.Errorf("entry one: %+v", one)
	}
	if !one.Published.Equal(time.Date(2024, 1, 31, 13, 30, 0, 0, time.UTC)) || !one.Updated.Equal(time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("dates: %v %v", one.Published, one.Updated)
	}
	if one.Published.Location() != time.UTC {
		t.Errorf("Published not in UTC: %v", one.Published.Location())
	}
	if !two.Published.Equal(two.Updated) || two.Published.IsZero() {
		t.Errorf("Published should fall back to Updated: %v %v", two.Published, two.Updated)
	}
	if two.ContentHTML != "Only a summary" || two.Author != "Bob" || two.Link != "https://elsewhere.example/two" {
		t.Errorf("entry two: %+v", two)
	}
}

func TestParseJSONFeed(t *testing.T) {
	f, err := Parse([]byte(jsonFeed), "application/feed+json", "https://json.example/feed.json")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Title != "JSON Blog" || f.SiteURL != "https://json.example/" || f.SelfURL != "https://json.example/feed.json" ||
		f.HubURL != "https://websub.example/hub" || f.Language != "de" {
		t.Errorf("feed: %+v", f)
	}
	if len(f.Items) != 3 {
		t.Fatalf("%d items", len(f.Items))
	}
	if it := f.Items[0]; it.ContentHTML != "<p>Hi</p>" || it.Summary != "Sum" || it.Author != "Jay Son" ||
		!it.Published.Equal(time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("item 1: %+v", it)
	}
	if it := f.Items[1]; it.GUID != "2" || it.Link != "https://json.example/2" ||
		it.ContentHTML != "a &lt; b<br>\nnext line" || !it.Published.Equal(time.Date(2024, 3, 2, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("item 2 (numeric id, content_text): %+v", it)
	}
	if it := f.Items[2]; it.ContentHTML != "only &lt;summary&gt;" {
		t.Errorf("item 3 (summary only): %+v", it)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"empty", "", ErrNotAFeed},
		{"white space", " \n\t", ErrNotAFeed},
		{"html page", `<!DOCTYPE html><html><head><title>x</title></head><body><p>hi</body></html>`, ErrNotAFeed},
		{"xhtml page", `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>`, ErrNotAFeed},
		{"other xml", `<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"/>`, ErrNotAFeed},
		{"plain text", "hello world", ErrNotAFeed},
		{"json array", `[1,2,3]`, ErrNotAFeed},
		{"json object, not a feed", `{"name":"package","version":"1.0.0"}`, ErrNotAFeed},
		{"broken json", `{"version":"https://jsonfeed.org/version/1.1",`, ErrNotAFeed},
		{"truncated rss", `<rss version="2.0"><channel><title>x</title><item><title>y`, ErrInvalidFeed},
		{"json feed with bad items", `{"version":"https://jsonfeed.org/version/1","items":{"a":1}}`, ErrInvalidFeed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.body), "", "https://example.com/feed")
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %+v, %v; want %v", f, err, tt.want)
			}
		})
	}
}

func TestParseItemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel><title>Big</title>`)
	const n = MaxItems + 250
	for i := range n {
		fmt.Fprintf(&b, "<item><guid>id-%d</guid><title>%d</title></item>", i, i)
	}
	b.WriteString(`</channel></rss>`)
	f, err := Parse([]byte(b.String()), "", "https://example.com/feed")
	if err != nil {
		t.Fatal(err)
	}
	if f.ItemsSeen != n || len(f.Items) != MaxItems {
		t.Fatalf("ItemsSeen %d, %d items; want %d, %d", f.ItemsSeen, len(f.Items), n, MaxItems)
	}
	if f.Items[0].GUID != "id-0" || f.Items[MaxItems-1].GUID != fmt.Sprintf("id-%d", MaxItems-1) {
		t.Errorf("not the first %d in document order: %q … %q", MaxItems, f.Items[0].GUID, f.Items[MaxItems-1].GUID)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name   string
		feed   string // items of an RSS channel
		same   bool   // whether the first two items share an identity
		wantID string // identity of the first item, if set
	}{
		{
			name: "same guid, different content: one identity",
			feed: `<item><guid>a</guid><title>t1</title><description>one</description></item>
			       <item><guid>a</guid><title>t2</title><description>two</description></item>`,
			same:   true,
			wantID: itemIdentity("a", "", "", ""),
		},
		{
			name: "guid wins over link",
			feed: `<item><guid>a</guid><link>https://example.com/1</link></item>
			       <item><guid>b</guid><link>https://example.com/1</link></item>`,
			wantID: itemIdentity("a", "https://example.com/1", "", ""),
		},
		{
			name: "no guid: link",
			feed: `<item><link>https://example.com/1</link><title>x</title></item>
			       <item><link>https://example.com/1</link><title>y</title></item>`,
			same:   true,
			wantID: itemIdentity("", "https://example.com/1", "whatever", "else"),
		},
		{
			name: "relative and absolute link are the same item",
			feed: `<item><link>/1</link></item><item><link>https://example.com/1</link></item>`,
			same: true,
		},
		{
			name: "guid trimmed",
			feed: `<item><guid> a </guid></item><item><guid>a</guid></item>`,
			same: true,
		},
		{
			name: "no guid, no link: title and content",
			feed: `<item><title>t</title><description>same</description></item>
			       <item><title>t</title><description>other</description></item>`,
			wantID: itemIdentity("", "", "t", "same"),
		},
		{
			name: "no guid, no link, same title and content",
			feed: `<item><title>t</title><description>same</description></item>
			       <item><title> t </title><description>same</description></item>`,
			same: true,
		},
		{
			name: "content:encoded is the content hashed",
			feed: `<item><title>t</title><description>d</description><content:encoded>c</content:encoded></item>
			       <item><title>t</title><description>d2</description><content:encoded>c</content:encoded></item>`,
			same:   true,
			wantID: itemIdentity("", "", "t", "c"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>f</title>` + tt.feed + `</channel></rss>`
			f, err := Parse([]byte(doc), "", "https://example.com/feed")
			if err != nil {
				t.Fatal(err)
			}
			if f.ItemsSeen != 2 {
				t.Fatalf("ItemsSeen = %d", f.ItemsSeen)
			}
			if got := len(f.Items) == 1; got != tt.same {
				t.Errorf("same identity = %v, want %v (%d items)", got, tt.same, len(f.Items))
			}
			if tt.wantID != "" && f.Items[0].Identity != tt.wantID {
				t.Errorf("identity = %s, want %s", f.Items[0].Identity, tt.wantID)
			}
		})
	}
}

func TestItemIdentityKindsDoNotCollide(t *testing.T) {
	ids := map[string]string{
		"guid x":           itemIdentity("x", "", "", ""),
		"link x":           itemIdentity("", "x", "", ""),
		"title x":          itemIdentity("", "", "x", ""),
		"content x":        itemIdentity("", "", "", "x"),
		"title ab, c":      itemIdentity("", "", "ab", "c"),
		"title a, bc":      itemIdentity("", "", "a", "bc"),
		"guid l:x":         itemIdentity("l:x", "", "", ""),
		"guid with prefix": itemIdentity("g:x", "", "", ""),
	}
	seen := map[string]string{}
	for name, id := range ids {
		if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Errorf("%s: identity %q is not 64 hex digits", name, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share identity %s", name, other, id)
		}
		seen[id] = name
	}
	// Stable across releases: the database keys on it.
	if got, want := itemIdentity("x", "", "", ""), "50b72a419f7fe640a5f651d3f742c114f00bd56bd2eda342060e9cc79b97f1e9"; got != want {
		t.Errorf("identity of guid x = %s, want %s (sha256 of \"g:x\")", got, want)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestScanXMLLinks(t *testing.T) {
	tests := []struct {
		name, doc, hub, self string
	}{
		{
			"atom with rel lists and case",
			`<feed xmlns="http://www.w3.org/2005/Atom"><link rel="HUB" href="https://h/"/><link rel="self alternate" href="/f"/></feed>`,
			"https://h/", "https://example.com/f",
		},
		{
			"rss atom:link",
			`<rss><channel><atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="hub" href="https://h/"/><link>https://site/</link></channel></rss>`,
			"https://h/", "",
		},
		{
			"rss link element before atom:link",
			`<rss><channel><link>https://site/</link><atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="self" href="https://s/"/></channel></rss>`,
			"", "https://s/",
		},
		{
			"rdf channel",
			`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><channel><link rel="self" href="https://s/"/></channel><item><link rel="hub" href="https://no/"/></item></rdf:RDF>`,
			"", "https://s/",
		},
		{
			"links inside entries are not the feed's",
			`<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="hub" href="https://no/"/></entry><link rel="hub" href="https://late/"/></feed>`,
			"", "",
		},
		{
			"first wins",
			`<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub" href="https://1/"/><link rel="hub" href="https://2/"/></feed>`,
			"https://1/", "",
		},
		{
			"xml:base on root",
			`<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://base.example/dir/"><link rel="self" href="feed"/></feed>`,
			"", "https://base.example/dir/feed",
		},
		{"garbage", `<<<>>>`, "", ""},
	}
	base := mustURL(t, "https://example.com/feed")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub, self := scanXMLLinks([]byte(tt.doc), base)
			if hub != tt.hub || self != tt.self {
				t.Errorf("got %q, %q; want %q, %q", hub, self, tt.hub, tt.self)
			}
		})
	}
}

func TestCleanTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  plain  ", "plain"},
		{"multi\n  line\ttitle", "multi line title"},
		{"AT&amp;T", "AT&T"},
		{"&#8220;quoted&#8221;", "\u201cquoted\u201d"},
		{"Why &lt;script&gt; tags", "Why <script> tags"},
		{"&nbsp;x&nbsp;", "x"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := cleanTitle(tt.in); got != tt.want {
			t.Errorf("cleanTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAbsURL(t *testing.T) {
	base := mustURL(t, "https://example.com/a/feed.xml")
	tests := []struct {
		base      bool
		ref, want string
	}{
		{true, "/x", "https://example.com/x"},
		{true, "y", "https://example.com/a/y"},
		{true, "//cdn.example/z", "https://cdn.example/z"},
		{true, "http://other/", "http://other/"},
		{true, "javascript:alert(1)", ""},
		{true, "mailto:a@b", ""},
		{true, "  ", ""},
		{false, "/x", "/x"},
		{false, "https://x/", "https://x/"},
		{false, "data:text/html,hi", ""},
	}
	for _, tt := range tests {
		b := base
		if !tt.base {
			b = nil
		}
		if got := absURL(b, tt.ref); got != tt.want {
			t.Errorf("absURL(%v, %q) = %q, want %q", tt.base, tt.ref, got, tt.want)
		}
	}
}

func isSentinel(err error) bool {
	return errors.Is(err, ErrNotAFeed) || errors.Is(err, ErrInvalidFeed) || errors.Is(err, ErrDecode)
}
