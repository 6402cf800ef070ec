package mailer

import (
	"strings"
	"testing"

	nethtml "golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// malformed is the strict well-formedness check of the corpus tests.
func malformed(doc string) []string { return testutil.MalformedHTML(doc) }

// roundTrips reports whether parsing a content fragment and rendering it
// again gives the same string: what we send parses as what we meant.
func roundTrips(fragment string) bool {
	return renderFragment(fragment, false) == fragment
}

func TestMalformedDetector(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`<p>a <b>b</b><br>c<img src="x"/></p><ul><li>x</li></ul>`, false},
		{`<p><p>x</p></p>`, true},
		{`<img src="x"></img>`, true},
		{`<p><div>x</div></p>`, true},
		{`<b><i>x</b></i>`, true},
		{`<p>open`, true},
		{`</div>`, true},
	}
	for _, tc := range tests {
		if got := len(malformed(tc.doc)) > 0; got != tc.want {
			t.Errorf("malformed(%q) = %v, want %v", tc.doc, malformed(tc.doc), tc.want)
		}
	}
}

func TestPrepareHTMLWellFormed(t *testing.T) {
	const base = "https://blog.example.com/post"
	tests := []struct {
		name, in string
		want     []string
		notWant  []string
	}{
		{"nested p", `<p><p>one<p>two</p></p>`, []string{"<p>one</p><p>two</p>"}, []string{"<p><p>"}},
		{"stray img end tag", `<p><img src="/a.png" alt="a"></img>after</p>`, []string{"after</p>"}, []string{"</img>"}},
		{"block in p", `<p>a<div>b</div>c</p>`, []string{"<p>a</p><div>b</div>c"}, nil},
		{"misnested inline", `<p><b>bold <i>both</b> italic</i></p>`, []string{"<b>bold <i>both</i></b><i> italic</i>"}, nil},
		{"unclosed", `<ul><li>a<li>b`, []string{"<ul><li>a</li><li>b</li></ul>"}, nil},
		{"table text", `<table><tr>loose<td>x</table>`, []string{"loose<table "}, nil},
		{"embed link in p", `<p>see <iframe src="https://v.example/e/1"></iframe> here</p>`, []string{"Embedded content: https://v.example/e/1"}, []string{"<p><p>"}},
		{"void br", `a<br></br>b`, []string{"a<br/><br/>b"}, []string{"</br>"}},
		{"heading in link", `<a href="/x"><h2>Title</h2></a>`, []string{`<h2>Title</h2></a>`}, nil},
		{"empty link dropped", `<p>a<a href="https://x.example/"></a> b</p>`, []string{"<p>a b</p>"}, []string{"x.example"}},
		{"link with only a space", `<p>a<a href="https://x.example/"> </a>b</p>`, []string{"<p>a b</p>"}, []string{"x.example"}},
		{"image link kept", `<a href="/big.png"><img src="/small.png"></a>`, []string{`href="https://blog.example.com/big.png"`, `src="https://blog.example.com/small.png"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := PrepareHTML(tc.in, base)
			wantContains(t, c.HTML, tc.want, tc.notWant)
			if bad := malformed(c.HTML); len(bad) > 0 {
				t.Errorf("malformed %s: %v", c.HTML, bad)
			}
			if !roundTrips(c.HTML) {
				t.Errorf("does not round-trip: %s\n-> %s", c.HTML, renderFragment(c.HTML, false))
			}
		})
	}
}

func TestOneLinkPerEmbed(t *testing.T) {
	const base = "https://blog.example.com/post"
	tests := []struct {
		name, in string
		links    int
	}{
		{"object and embed", `<object data="https://v.example/p.swf"><param name="movie" value="https://v.example/p.swf"><embed src="https://v.example/p.swf"></object>`, 1},
		{"object without data", `<object width="400"><param name="movie" value="https://v.example/p.swf"><embed src="https://v.example/p.swf" type="application/x-shockwave-flash"></embed></object>`, 1},
		{"object embed other url", `<object data="https://v.example/a.swf"><embed src="https://v.example/b.swf"></object>`, 1},
		{"two objects", `<object data="https://v.example/a.swf"></object><object data="https://v.example/b.swf"></object>`, 2},
		{"video and same source", `<video src="https://v.example/v.mp4"><source src="https://v.example/v.mp4"></video>`, 1},
		{"video two formats", `<video><source src="https://v.example/v.mp4"><source src="https://v.example/v.webm"></video>`, 2},
		{"same iframe twice", `<iframe src="https://v.example/e/1"></iframe><p>x</p><iframe src="https://v.example/e/1"></iframe>`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := PrepareHTML(tc.in, base)
			n := strings.Count(c.HTML, "<a ")
			if n != tc.links {
				t.Errorf("%d links, want %d: %s", n, tc.links, c.HTML)
			}
			if n := strings.Count(c.Text, "https://v.example/"); n != tc.links {
				t.Errorf("text part has %d URLs, want %d:\n%s", n, tc.links, c.Text)
			}
		})
	}
}

func TestTrackingPixel(t *testing.T) {
	tests := []struct {
		img  string
		want bool
	}{
		{`<img src="https://x.example/p.gif" width="1" height="1">`, true},
		{`<img src="https://x.example/p.gif" width="0" height="0">`, true},
		{`<img src="https://x.example/p.gif" width="1px" height="1px" alt="">`, true},
		{`<img src="https://x.example/p.gif" height="1">`, true},
		{`<img src="https://x.example/p.gif" width="2">`, true},
		{`<img src="https://x.example/p.gif" style="width:1px;height:1px">`, true},
		{`<img src="https://x.example/p.gif" style="display:none">`, true},
		{`<img src="https://x.example/p.gif" width="1" height="300">`, false},
		{`<img src="https://x.example/p.gif" width="3" height="3">`, false},
		{`<img src="https://x.example/photo.jpg">`, false},
		{`<img src="https://x.example/photo.jpg" width="640" height="480">`, false},
		{`<img src="https://x.example/photo.jpg" width="100%">`, false},
		{`<img src="http://feeds.feedburner.com/~r/Example/~4/abcdef">`, true},
		{`<img src="http://feeds.feedburner.com/~ff/Example?d=yIl2AUoC8zA" border="0">`, true},
		{`<img src="http://feeds.feedburner.com/~a/Example?i=x">`, true},
		{`<img src="http://feeds.feedburner.com/~f/Example?i=Jd0gT3" border="0">`, true},
		{`<img src="http://feeds2.feedburner.com/~f/Example?i=Jd0gT3">`, true},
		{`<img src="http://feedproxy.google.com/~ff/Example?d=qj6IDK7rITs">`, true},
		{`<img src="http://feedproxy.google.com/~f/Example?i=x">`, true},
		{`<img src="http://feedproxy.google.com/~a/Example?i=x">`, true},
		{`<img src="https://feeds.feedburner.com/~d/styles/itemcontent.css">`, false},
		{`<img src="https://feedproxy.google.com/~r/Example/~4/xyz">`, true},
		{`<img src="https://feeds.feedburner.com/Example-logo.png">`, false},
		{`<img src="https://pixel.wp.com/b.gif?host=x">`, true},
		{`<img src="https://stats.wordpress.com/b.gif?x=1">`, true},
		{`<img src="http://feeds.wordpress.com/1.0/comments/example.wordpress.com/1/">`, true},
		{`<img src="https://ad.doubleclick.net/ad/x;sz=300x250">`, true},
		{`<img src="https://doubleclick.net/x">`, true},
		{`<img src="https://notdoubleclick.net/x.png">`, false},
		{`<img src="https://pagead2.googlesyndication.com/pagead/x.gif">`, true},
		{`<img src="https://www.google-analytics.com/__utm.gif?x">`, true},
		{`<img src="https://i0.wp.com/blog.example.com/photo.jpg">`, false},
	}
	for _, tc := range tests {
		z := nethtml.NewTokenizer(strings.NewReader(tc.img))
		z.Next()
		if got := trackingPixel(z.Token()); got != tc.want {
			t.Errorf("trackingPixel(%s) = %v, want %v", tc.img, got, tc.want)
		}
	}
}

func TestPixelsRemoved(t *testing.T) {
	in := `<p>Real <img src="/photo.jpg" alt="photo"> text.</p>` +
		`<img src="http://feeds.feedburner.com/~r/Example/~4/abc" height="1" width="1" alt=""/>` +
		`<div class="feedflare"><a href="http://feeds.feedburner.com/~ff/Example?a=1"><img src="http://feeds.feedburner.com/~ff/Example?d=1" border="0"></img></a> ` +
		`<a href="http://feeds.feedburner.com/~ff/Example?a=2"><img src="http://feeds.feedburner.com/~ff/Example?d=2" border="0"></img></a></div>` +
		`<div class="feedflare"><a href="http://feeds.feedburner.com/~f/Example?a=3"><img src="http://feeds.feedburner.com/~f/Example?i=3" border="0"></img></a></div>` +
		`<img src="https://counter.example/c.gif" width="1" height="1">`
	c := PrepareHTML(in, "https://blog.example.com/p")
	if c.Pixels != 5 {
		t.Errorf("%d pixels removed, want 5", c.Pixels)
	}
	wantContains(t, c.HTML, []string{`src="https://blog.example.com/photo.jpg"`}, []string{"feedburner", "counter.example"})
	if strings.Contains(c.Text, "feedburner") || c.Text != "Real [photo] text." {
		t.Errorf("text part %q", c.Text)
	}
}

func TestTextPartKeepsWordsApart(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"image link before a word", `<p><a href="https://x.example/big.png"><img src="https://x.example/s.png"></a>Next word</p>`, "https://x.example/big.png Next word"},
		{"image link after a word", `<p>Word<a href="https://x.example/big.png"><img src="https://x.example/s.png"></a></p>`, "Word https://x.example/big.png"},
		{"image link before a comma", `<p><a href="https://x.example/b"><img src="https://x.example/s.png"></a>, then</p>`, "https://x.example/b, then"},
		{"alt text between words", `<p>a<img src="https://x.example/s.png" alt="chart">b</p>`, "a [chart] b"},
		{"image without alt between words", `<p>a<img src="https://x.example/s.png">b</p>`, "a [image] b"},
		{"empty links", `<p>Share:<a href="https://a.example/1"></a><a href="https://a.example/2"></a><a href="https://a.example/3"></a><a href="https://a.example/4"></a><a href="https://a.example/5"></a><a href="https://a.example/6"></a><a href="https://a.example/7"></a></p><p>End.</p>`, "Share:\n\nEnd."},
		{"link text then word", `<p><a href="https://x.example/">here</a>, and</p>`, "here <https://x.example/>, and"},
		{"cells", `<table><tr><td>a</td><td>b</td></tr></table>`, "a | b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PrepareHTML(tc.in, "https://x.example/").Text; got != tc.want {
				t.Errorf("text part\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTextToHTML(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"a & b", "<p>a &amp; b</p>\n"},
		{"see https://x.example/a?b=1&c=2.", `<p>see <a href="https://x.example/a?b=1&amp;c=2">https://x.example/a?b=1&amp;c=2</a>.</p>` + "\n"},
		{"(https://x.example/wiki/A_(b)) end", `<p>(<a href="https://x.example/wiki/A_(b)">https://x.example/wiki/A_(b)</a>) end</p>` + "\n"},
		{"one\ntwo\n\nthree", "<p>one<br>\ntwo</p>\n<p>three</p>\n"},
		{"<b>not a tag</b> javascript:alert(1)", "<p>&lt;b&gt;not a tag&lt;/b&gt; javascript:alert(1)</p>\n"},
	}
	for _, tc := range tests {
		if got := TextToHTML(tc.in); got != tc.want {
			t.Errorf("TextToHTML(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestEnclosureViews(t *testing.T) {
	got := enclosureViews([]model.Enclosure{
		{URL: "https://pod.example/media/ep%201.mp3", Type: "audio/mpeg", Length: 12345678, Duration: 3723},
		{URL: "https://pod.example/v.mp4", Type: "video/mp4", Duration: 45},
		{URL: "https://pod.example/paper.pdf", Type: "application/pdf", Length: 950},
		{URL: "https://pod.example/x.bin", Type: "application/octet-stream", Length: 2_500_000_000},
		{URL: "https://pod.example/talk.m4a"},
		{URL: "https://pod.example/", Type: "video"},
		{URL: "javascript:alert(1)", Type: "audio/mpeg"},
		{URL: "https://c9.example/ep.mp3", Type: "audio/mp3", Length: 1, Duration: 1830},
		{URL: "https://c9.example/ep_mid.mp4", Type: "video/mp4", Length: 9999},
		{URL: "https://pod.example/notes.txt", Type: "text/plain", Length: 99},
	})
	want := []enclosureView{
		{Kind: "Audio", URL: "https://pod.example/media/ep%201.mp3", Name: "ep 1.mp3", Details: "MP3 · 12.3 MB · 1:02:03"},
		{Kind: "Video", URL: "https://pod.example/v.mp4", Name: "v.mp4", Details: "MP4 · 0:45"},
		{Kind: "Document", URL: "https://pod.example/paper.pdf", Name: "paper.pdf", Details: "PDF · 950 bytes"},
		{Kind: "File", URL: "https://pod.example/x.bin", Name: "x.bin", Details: "application/octet-stream · 2.5 GB"},
		{Kind: "Audio", URL: "https://pod.example/talk.m4a", Name: "talk.m4a", Details: "M4A"},
		{Kind: "Video", URL: "https://pod.example/", Name: "pod.example"},
		// Placeholder sizes ("1 bytes") are not shown.
		{Kind: "Audio", URL: "https://c9.example/ep.mp3", Name: "ep.mp3", Details: "MP3 · 30:30"},
		{Kind: "Video", URL: "https://c9.example/ep_mid.mp4", Name: "ep_mid.mp4", Details: "MP4"},
		{Kind: "Document", URL: "https://pod.example/notes.txt", Name: "notes.txt", Details: "text/plain"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d views, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("view %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestItemEmailMedia(t *testing.T) {
	s := testSender()
	youtube := testItem()
	youtube.ItemHTML, youtube.ItemLink = "", "https://www.youtube.com/watch?v=abc123"
	youtube.Media = model.ItemMedia{Thumbnail: "https://i1.ytimg.com/vi/abc123/hqdefault.jpg",
		Description: "Notes: https://example.com/notes.\nSecond line."}
	podcast := testItem()
	podcast.ItemHTML = "<p>Show notes.</p>"
	podcast.Media = model.ItemMedia{Thumbnail: "https://pod.example/cover.jpg", Enclosures: []model.Enclosure{
		{URL: "https://pod.example/ep1.mp3", Type: "audio/mpeg", Length: 12345678, Duration: 3723}}}
	thumbOnly := testItem()
	thumbOnly.ItemHTML = "<p> </p>"
	thumbOnly.Media = model.ItemMedia{Thumbnail: "https://i1.ytimg.com/vi/x/hq.jpg"}
	bare := testItem()
	bare.ItemHTML = "  "
	// Vimeo: a small copy of the picture, then the text; the feed's
	// thumbnail and player in media:content.
	vimeo := testItem()
	vimeo.ItemLink = "https://vimeo.com/123456"
	vimeo.ItemHTML = `<p><a href="https://vimeo.com/123456"><img src="https://i.vimeocdn.com/video/1_200x150.jpg" alt="" /></a></p><p>A film about the sea.</p><p><strong>Cast:</strong> <a href="https://vimeo.com/someone">Someone</a></p>`
	vimeo.Media = model.ItemMedia{Thumbnail: "https://i.vimeocdn.com/video/1_960x540.jpg", Player: "https://player.vimeo.com/video/123456"}
	// Channel 9: show notes, one video file (its size a placeholder), a
	// thumbnail at item level.
	ch9 := testItem()
	ch9.ItemLink = "https://learn.example.com/shows/show/episode-12"
	ch9.ItemHTML = "<p>In this episode we look at the new release.</p>"
	ch9.Media = model.ItemMedia{Thumbnail: "https://cdn.example.com/ep/file_960.jpg", Enclosures: []model.Enclosure{
		{URL: "https://cdn.example.com/ep/file_high.mp4", Type: "video/mp4", Length: 1, Duration: 1830}}}
	// An audio podcast on Omny: its media:content names a web player.
	omny := testItem()
	omny.ItemLink = "https://omny.fm/shows/lage/folge-1"
	omny.ItemHTML = "<p>Was heute wichtig ist.</p>"
	omny.Media = model.ItemMedia{Thumbnail: "https://www.omny.fm/shows/lage/image.jpg", Player: "https://omny.fm/shows/lage/folge-1/embed",
		Enclosures: []model.Enclosure{{URL: "https://traffic.omny.fm/d/clips/a/audio.mp3", Type: "audio/mpeg", Length: 21554816, Duration: 1346}}}
	noLink := testItem()
	noLink.ItemHTML, noLink.ItemLink = "", ""
	tests := []struct {
		name            string
		e               ItemEmail
		html, text, not []string
	}{
		{"youtube", youtube,
			[]string{`<a href="https://www.youtube.com/watch?v=abc123" rel="noopener noreferrer" target="_blank"><img src="https://i1.ytimg.com/vi/abc123/hqdefault.jpg" alt="Hello, world"`,
				`<a href="https://example.com/notes"`, "Second line.", "▶\ufe0e Play</a>", ">Watch on YouTube</a>"},
			[]string{"March 3, 2026\n\nNotes: https://example.com/notes.\nSecond line.", "Watch on YouTube: https://www.youtube.com/watch?v=abc123"},
			[]string{"Open the post", "[Hello, world]", "Read on the site"}},
		{"podcast", podcast,
			[]string{"Show notes.", `href="https://pod.example/ep1.mp3"`, ">ep1.mp3</a>", "MP3 · 12.3 MB · 1:02:03", ">Audio</p>"},
			[]string{"Show notes.\n\nAudio: ep1.mp3 (MP3 · 12.3 MB · 1:02:03)\nhttps://pod.example/ep1.mp3\n"},
			[]string{"cover.jpg", "Open the post"}},
		{"thumbnail only", thumbOnly,
			[]string{`src="https://i1.ytimg.com/vi/x/hq.jpg"`},
			[]string{"[Hello, world] <https://blog.example.com/posts/hello>"},
			[]string{"Open the post"}},
		{"vimeo", vimeo,
			[]string{`<img src="https://i.vimeocdn.com/video/1_960x540.jpg"`, "▶\ufe0e Play</a>", "A film about the sea.", ">Watch on Vimeo</a>"},
			[]string{"A film about the sea.", "Watch on Vimeo: https://vimeo.com/123456"},
			[]string{"1_200x150.jpg", "Read on the site"}},
		{"channel 9", ch9,
			[]string{`<img src="https://cdn.example.com/ep/file_960.jpg"`, "▶\ufe0e Play · 30:30</a>", "In this episode", ">Watch on learn.example.com</a>", ">Video</p>", "MP4 · 30:30"},
			[]string{"In this episode", "Video: file_high.mp4 (MP4 · 30:30)"},
			[]string{"1 bytes", "Read on the site"}},
		{"omny podcast", omny,
			[]string{"Was heute wichtig ist.", ">Listen on omny.fm</a>", ">Audio</p>", "MP3 · 21.6 MB · 22:26"},
			[]string{"Listen on omny.fm: https://omny.fm/shows/lage/folge-1"},
			[]string{"Watch", "Read on the site"}},
		{"nothing", bare,
			[]string{`href="https://blog.example.com/posts/hello" target="_blank" rel="noopener noreferrer" style="color:#0969da;">Open the post</a>`},
			[]string{"Open the post: https://blog.example.com/posts/hello"},
			[]string{"Read on the site"}},
		{"nothing, no link", noLink,
			[]string{"The feed gives no text for this post."},
			[]string{"The feed gives no text for this post."},
			[]string{"Read on the site", "Open the post"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.Item(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			p := renderParse(t, m)
			wantContains(t, p.html, tc.html, tc.not)
			wantContains(t, strings.ReplaceAll(p.text, "\r\n", "\n"), tc.text, tc.not)
			if bad := malformed(p.html); len(bad) > 0 {
				t.Errorf("malformed HTML part: %v", bad)
			}
		})
	}
}

func TestDigestMedia(t *testing.T) {
	s := testSender()
	m, err := s.Digest(DigestEmail{To: "r@example.org", MessageID: s.MessageID("digest.1"), Date: testDate,
		Feeds: []DigestFeed{{Title: "Channel", SiteURL: "https://www.youtube.com/channel/x", Items: []DigestItem{
			{Title: "Video", Link: "https://www.youtube.com/watch?v=1", ExcerptHTML: TextToHTML("About https://x.example/a"),
				Thumbnail: "https://i.ytimg.com/vi/1/hq.jpg"},
			{Title: "Episode", Link: "https://pod.example/1", ExcerptHTML: "Notes",
				Enclosures: []model.Enclosure{{URL: "https://pod.example/1.mp3", Type: "audio/mpeg", Duration: 61}}},
			{Title: "Bare", Link: "https://blog.example/bare"},
			{Title: "Nothing at all"},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	wantContains(t, p.html, []string{`src="https://i.ytimg.com/vi/1/hq.jpg"`, `href="https://x.example/a"`, `href="https://pod.example/1.mp3"`,
		"MP3 · 1:01", `href="https://blog.example/bare" target="_blank" rel="noopener noreferrer" style="color:#0969da;">Open the post</a>`,
		"The feed gives no text for this post."}, nil)
	wantContains(t, strings.ReplaceAll(p.text, "\r\n", "\n"), []string{"  About https://x.example/a", "  Audio: 1.mp3 (MP3 · 1:01)\n  https://pod.example/1.mp3",
		"  Open the post: https://blog.example/bare", "  The feed gives no text for this post."}, nil)
	if bad := malformed(p.html); len(bad) > 0 {
		t.Errorf("malformed HTML part: %v", bad)
	}
}
