package mailer

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"
	nethtml "golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// dangerousInput spots feed content that tries something, so the corpus
// statistics show the test is not vacuous.
var dangerousInput = regexp.MustCompile(`(?i)<\s*script|\son[a-z]+\s*=|javascript|vbscript|<\s*iframe|<\s*object|<\s*embed|<\s*style|expression\s*\(|<\s*form|<\s*meta|<\s*link|<\s*base|<\s*applet|data:`)

// allowedMeta are the meta tags our own <head> has.
var allowedMeta = map[string]bool{"viewport": true, "x-apple-disable-message-reformatting": true, "color-scheme": true, "supported-color-schemes": true}

var forbiddenElements = map[string]bool{
	"script": true, "style": true, "iframe": true, "frame": true, "frameset": true, "object": true,
	"embed": true, "applet": true, "form": true, "input": true, "button": true, "textarea": true,
	"select": true, "option": true, "link": true, "base": true, "svg": true, "math": true,
	"video": true, "audio": true, "source": true, "param": true, "noscript": true, "xml": true,
	"blink": true, "marquee": true, "bgsound": true, "layer": true, "ilayer": true,
}

// squeeze removes what browsers ignore inside a URL scheme: white space and
// control characters, and lower-cases the rest.
func squeeze(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r <= 0x20 || r == 0x7f || r == 0xa0 || r == 0xad || r == 0x200b || r == 0xfeff {
			continue
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// unsafeHTML lists what a browser or mail client would run or load from an
// HTML part: script and other active elements, event-handler attributes,
// script/data URLs in any attribute (entity-, case- and white-space-
// obfuscated forms included, since the tokenizer decodes entities), CSS
// expressions, and comments other than our Outlook conditionals.
func unsafeHTML(doc string) []string {
	var bad []string
	if regexp.MustCompile(`(?i)<\s*/?\s*script`).MatchString(doc) {
		bad = append(bad, "raw <script")
	}
	z := nethtml.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == nethtml.ErrorToken {
			return bad
		}
		tok := z.Token()
		switch tt {
		case nethtml.CommentToken:
			if !strings.HasPrefix(tok.Data, "[if mso]>") && !strings.HasPrefix(tok.Data, "[if mso]><") {
				bad = append(bad, "comment: "+tok.Data)
			}
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			if forbiddenElements[tok.Data] {
				bad = append(bad, "element <"+tok.Data+">")
			}
			if tok.Data == "meta" {
				ok := false
				for _, a := range tok.Attr {
					if a.Key == "charset" || (a.Key == "name" && allowedMeta[a.Val]) {
						ok = true
					}
				}
				if !ok {
					bad = append(bad, fmt.Sprintf("meta %v", tok.Attr))
				}
			}
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				v := squeeze(a.Val)
				switch {
				case strings.HasPrefix(key, "on"):
					bad = append(bad, fmt.Sprintf("event handler %s=%q on <%s>", a.Key, a.Val, tok.Data))
				case strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:") || strings.HasPrefix(v, "livescript:") ||
					strings.HasPrefix(v, "data:") || strings.Contains(v, "javascript:") && (key == "href" || key == "src" || key == "srcset"):
					bad = append(bad, fmt.Sprintf("script/data URL %s=%q on <%s>", a.Key, a.Val, tok.Data))
				case key == "style" && (strings.Contains(v, "expression(") || strings.Contains(v, "url(") || strings.Contains(v, "behavior") || strings.Contains(v, "-moz-binding")):
					bad = append(bad, fmt.Sprintf("active CSS %q on <%s>", a.Val, tok.Data))
				case key == "href" || key == "src":
					if !(strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "mailto:")) {
						bad = append(bad, fmt.Sprintf("non-http URL %s=%q on <%s>", a.Key, a.Val, tok.Data))
					}
				}
			}
		}
	}
}

// TestSanitizeCorpus renders an item email for every piece of HTML in the
// feedparser sanitize corpus (745 hostile and benign feeds) and checks the
// HTML part carries nothing active.
func TestSanitizeCorpus(t *testing.T) {
	dir := filepath.Join(testutil.CorpusDir(t), "feedparser", "tests", "wellformed", "sanitize")
	files, err := filepath.Glob(filepath.Join(dir, "*.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		testutil.SkipOrFail(t, "no files in "+dir)
	}
	var st struct {
		files, parsed, extracted, unparsed, emails, hostile, scriptInInput, violations, wantSafe, keptSafe int
		images, trackers                                                                                   int
	}
	s := testSender()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		st.files++
		type input struct{ field, html, title, feedTitle, author, link string }
		var inputs []input
		feed, err := gofeed.NewParser().Parse(bytes.NewReader(data))
		if err != nil {
			// Not a feed gofeed accepts: the whole file goes in as the
			// content, which is as hostile as it gets.
			st.unparsed++
			inputs = append(inputs, input{field: "raw file", html: string(data), title: string(data)})
		} else {
			st.parsed++
			add := func(field, html, title, author, link string) {
				if strings.TrimSpace(html) == "" && strings.TrimSpace(title) == "" {
					return
				}
				inputs = append(inputs, input{field, html, title, feed.Title, author, link})
			}
			add("feed.title", feed.Title, feed.Title, "", "")
			add("feed.description", feed.Description, "", "", feed.Link)
			add("feed.copyright", feed.Copyright, "", "", feed.Link)
			for i, it := range feed.Items {
				author := ""
				if it.Author != nil {
					author = it.Author.Name
				}
				add(fmt.Sprintf("items[%d].content", i), it.Content, it.Title, author, it.Link)
				add(fmt.Sprintf("items[%d].description", i), it.Description, it.Title, author, it.Link)
			}
			if len(inputs) == 0 {
				// Elements gofeed does not map (Atom 0.3 <info>, RSS
				// <body>, <xhtml:body>, <fullitem>): take the element
				// the file is about, as a reader that knew it would.
				name := elementFor(filepath.Base(f))
				if html, ok := elementContent(data, name); ok {
					st.extracted++
					add("<"+name+">", html, "", "", "")
				}
			}
			if len(inputs) == 0 {
				inputs = append(inputs, input{field: "raw file", html: string(data), title: string(data)})
				st.unparsed++
			}
		}
		// Files whose expected result is "safe description" must keep that
		// text: sanitizing is not wiping.
		// (gofeed does not decode Atom 0.3 mode="base64" content: those
		// files only count for safety.)
		wantSafe := bytes.Contains(data, []byte("'safe description'")) && !strings.Contains(f, "base64")
		keptSafe := false
		for _, in := range inputs {
			e := testItem()
			e.ItemHTML, e.ItemTitle, e.FeedTitle, e.Author, e.ItemLink = in.html, in.title, in.feedTitle, in.author, in.link
			if e.ItemLink == "" {
				e.ItemLink = "http://example.com/entry"
			}
			m, err := s.Item(e)
			if err != nil {
				t.Errorf("%s %s: compose: %v", filepath.Base(f), in.field, err)
				continue
			}
			p := renderParse(t, m)
			st.emails++
			if dangerousInput.MatchString(in.html + in.title + in.feedTitle + in.author) {
				st.hostile++
			}
			if regexp.MustCompile(`(?i)<\s*script`).MatchString(in.html + in.title) {
				st.scriptInInput++
			}
			if wantSafe && strings.Contains(p.text, "safe") && strings.Contains(p.text, "description") {
				keptSafe = true
				if strings.Contains(p.text, "location.href") {
					t.Errorf("%s %s: script text in the text part:\n%s", filepath.Base(f), in.field, p.text)
				}
			}
			imgs, trackers := trackerImagesIn(p.html)
			st.images += imgs
			if len(trackers) > 0 {
				st.trackers += len(trackers)
				t.Errorf("%s %s: tracking images left: %s", filepath.Base(f), in.field, strings.Join(trackers, "; "))
			}
			if bad := unsafeHTML(p.html); len(bad) > 0 {
				st.violations++
				t.Errorf("%s %s: unsafe HTML part: %s", filepath.Base(f), in.field, strings.Join(bad, "; "))
			}
			for _, h := range []string{"Subject", "From", "List-Id"} {
				if strings.ContainsAny(p.header.Get(h), "\r\n") {
					t.Errorf("%s %s: %s spans lines", filepath.Base(f), in.field, h)
				}
			}
		}
		if wantSafe {
			st.wantSafe++
			if keptSafe {
				st.keptSafe++
			} else {
				t.Errorf("%s: 'safe description' lost", filepath.Base(f))
			}
		}
	}
	t.Logf("sanitize corpus: %d files expect 'safe description', %d kept it", st.wantSafe, st.keptSafe)
	t.Logf("sanitize corpus: %d files (%d parsed by gofeed, %d of them through an element gofeed does not map, %d fed in raw), %d emails rendered, %d with hostile-looking input (%d containing <script), %d unsafe HTML parts",
		st.files, st.parsed, st.extracted, st.unparsed, st.emails, st.hostile, st.scriptInInput, st.violations)
	t.Logf("sanitize corpus: %d images in the emails, %d of them tracking pixels or tracker images (FeedBurner, FeedFlare, ads, stats)", st.images, st.trackers)
	if st.emails < st.files {
		t.Errorf("only %d emails from %d files", st.emails, st.files)
	}
}

// elementFor names the element a corpus file exercises when gofeed does not
// map it to a field.
func elementFor(file string) string {
	for _, p := range []struct{ prefix, elem string }{
		{"feed_info", "info"}, {"item_xhtml_body", "body"}, {"item_body", "body"}, {"item_fullitem", "fullitem"},
	} {
		if strings.HasPrefix(file, p.prefix) {
			return p.elem
		}
	}
	return ""
}

// elementContent returns the content of the first element with the given
// local name: its inner markup when it has child elements (inline XHTML),
// else its text (escaped HTML).
func elementContent(data []byte, local string) (string, bool) {
	if local == "" {
		return "", false
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	for {
		tok, err := d.Token()
		if err != nil {
			return "", false
		}
		start, ok := tok.(xml.StartElement)
		if !ok || start.Name.Local != local {
			continue
		}
		var v struct {
			Inner string `xml:",innerxml"`
			Text  string `xml:",chardata"`
		}
		if err := d.DecodeElement(&v, &start); err != nil {
			return "", false
		}
		if inner := strings.TrimSpace(v.Inner); !strings.HasPrefix(inner, "<![CDATA[") && regexp.MustCompile(`<[A-Za-z]`).MatchString(inner) {
			return v.Inner, true
		}
		return v.Text, true
	}
}

// TestUnsafeHTMLDetector makes sure the corpus check would notice.
func TestUnsafeHTMLDetector(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`<p>ok <a href="https://x.example/">x</a></p>`, false},
		{`<SCRIPT>alert(1)</SCRIPT>`, true},
		{`<img src=x onerror=alert(1)>`, true},
		{`<a href="JaVaScRiPt:alert(1)">x</a>`, true},
		{`<a href="jav&#x09;ascript:alert(1)">x</a>`, true},
		{`<a href="&#106;&#97;vascript:alert(1)">x</a>`, true},
		{`<a href=" javascript:alert(1)">x</a>`, true},
		{`<img src="data:image/svg+xml;base64,PHN2Zz4=">`, true},
		{`<p style="width: expression(alert(1))">x</p>`, true},
		{`<!-- <script>x</script> -->`, true},
		{`<iframe src="https://x.example/"></iframe>`, true},
		{`<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>`, false},
	}
	for _, tc := range tests {
		if got := len(unsafeHTML(tc.doc)) > 0; got != tc.want {
			t.Errorf("unsafeHTML(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

// trackerImagesIn counts the images of an HTML part and returns those that
// are tracking pixels or come from a tracker or ad source (trackingPixel):
// what an email must never load.
func trackerImagesIn(doc string) (images int, trackers []string) {
	z := nethtml.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == nethtml.ErrorToken {
			return images, trackers
		}
		if tt != nethtml.StartTagToken && tt != nethtml.SelfClosingTagToken {
			continue
		}
		if tok := z.Token(); tok.Data == "img" {
			images++
			if trackingPixel(tok) {
				trackers = append(trackers, tok.String())
			}
		}
	}
}

// TestTrackerImagesIn makes sure the corpus check would notice FeedFlare
// and other tracker images, and counts real ones.
func TestTrackerImagesIn(t *testing.T) {
	tests := []struct {
		doc            string
		images, tracks int
	}{
		{`<p><img src="https://x.example/photo.jpg" alt="a"></p>`, 1, 0},
		{`<a href="http://feeds.feedburner.com/~f/Ex?a=1"><img src="http://feeds.feedburner.com/~f/Ex?i=1"></a>`, 1, 1},
		{`<img src="http://feeds.feedburner.com/~ff/Ex?d=1"><img src="https://x.example/p.gif" width="1" height="1"/>`, 2, 2},
		{`<img src="http://feedproxy.google.com/~r/Ex/~4/abc">`, 1, 1},
	}
	for _, tc := range tests {
		n, bad := trackerImagesIn(tc.doc)
		if n != tc.images || len(bad) != tc.tracks {
			t.Errorf("trackerImagesIn(%s) = %d images, %d trackers %v; want %d, %d", tc.doc, n, len(bad), bad, tc.images, tc.tracks)
		}
	}
}
