package mailer

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

func TestPostVideo(t *testing.T) {
	yt := "https://www.youtube.com/watch?v=abc"
	tests := []struct {
		name, link, content string
		media               model.ItemMedia
		want                bool
		watch               string
		duration            int64
	}{
		{"media player", "https://v.example/1", "", model.ItemMedia{Player: "https://v.example/play/1"}, true, "Watch on v.example", 0},
		{"youtube link and player", yt, "", model.ItemMedia{Player: yt}, true, "Watch on YouTube", 0},
		{"youtube link only", "https://youtu.be/abc", "", model.ItemMedia{}, true, "Watch on YouTube", 0},
		{"vimeo subdomain", "https://player.vimeo.com/video/1", "", model.ItemMedia{}, true, "Watch on Vimeo", 0},
		{"video enclosure", "https://www.example.org/ep/1", "<p>Notes</p>",
			model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://cdn.example.org/1.mp4", Type: "video/mp4", Duration: 225}}}, true, "Watch on example.org", 225},
		{"video by extension", "https://b.example/1", "", model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://b.example/1.webm"}}}, true, "Watch on b.example", 0},
		{"audio enclosure", "https://b.example/1", "", model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://b.example/1.mp3", Type: "audio/mpeg"}}}, false, "", 0},
		{"audio with a web player", "https://omny.fm/shows/lage/ep1", "<p>Notes</p>", model.ItemMedia{Player: "https://omny.fm/shows/lage/ep1/embed",
			Enclosures: []model.Enclosure{{URL: "https://traffic.omny.fm/d/clips/a/audio.mp3", Type: "audio/mpeg", Duration: 1346}}}, true, "Listen on omny.fm", 1346},
		{"audio with a player, no link", "", "", model.ItemMedia{Player: "https://p.example/embed",
			Enclosures: []model.Enclosure{{URL: "https://p.example/a.m4a"}}}, true, "Listen to the episode", 0},
		{"audio and video files", "https://c9.example/ep", "", model.ItemMedia{Player: "https://c9.example/embed", Enclosures: []model.Enclosure{
			{URL: "https://c9.example/ep.mp3", Type: "audio/mp3"}, {URL: "https://c9.example/ep.mp4", Type: "video/mp4", Duration: 9}}}, true, "Watch on c9.example", 9},
		{"youtube iframe", "https://b.example/post", `<p>Look:</p><iframe src="https://www.youtube-nocookie.com/embed/abc"></iframe>`, model.ItemMedia{}, true, "Watch on b.example", 0},
		{"vimeo embed", "https://b.example/post", `<embed src="https://vimeo.com/moogaloop.swf?clip_id=1">`, model.ItemMedia{}, true, "Watch on b.example", 0},
		{"object data", "https://b.example/post", `<object data="https://www.dailymotion.com/swf/x1"></object>`, model.ItemMedia{}, true, "Watch on b.example", 0},
		{"video element", "https://b.example/post", `<VIDEO src="/v.mp4"></VIDEO>`, model.ItemMedia{}, true, "Watch on b.example", 0},
		{"map iframe", "https://b.example/post", `<iframe src="https://maps.example.com/embed"></iframe>`, model.ItemMedia{}, false, "", 0},
		{"video host named in text only", "https://b.example/post", `<p>see youtube.com</p><a href="https://youtube.com/x">x</a>`, model.ItemMedia{}, false, "", 0},
		{"photo", "https://b.example/post", `<img src="https://b.example/p.jpg">`, model.ItemMedia{Thumbnail: "https://b.example/p.jpg"}, false, "", 0},
		{"no link", "", "", model.ItemMedia{Player: "https://v.example/p"}, true, "Watch the video", 0},
		{"youtube short", "https://m.youtube.com/shorts/abc", "", model.ItemMedia{}, true, "Watch on YouTube", 0},
		{"youtube channel page", "https://www.youtube.com/channel/UC1", "", model.ItemMedia{}, false, "", 0},
		{"vimeo video page", "https://vimeo.com/123456", "", model.ItemMedia{}, true, "Watch on Vimeo", 0},
		{"vimeo blog", "https://vimeo.com/blog/post/x", "", model.ItemMedia{}, false, "", 0},
		{"ted talk", "https://www.ted.com/talks/someone_on_something", "", model.ItemMedia{}, true, "Watch on TED", 0},
		{"ted article", "https://ideas.ted.com/an-article/", "", model.ItemMedia{}, false, "", 0},
		{"ted article with a player", "https://ideas.ted.com/an-article/", "", model.ItemMedia{Player: "https://embed.ted.com/talks/x"}, true, "Watch on TED", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := postVideo(tc.link, tc.content, tc.media)
			if ok != tc.want {
				t.Fatalf("video = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if v.Watch() != tc.watch || v.Duration != tc.duration {
				t.Errorf("got %q, %d s; want %q, %d s", v.Watch(), v.Duration, tc.watch, tc.duration)
			}
		})
	}
}

func TestThumbnailHTML(t *testing.T) {
	video := &videoPost{Site: "YouTube", Duration: 225}
	tests := []struct {
		name     string
		th       thumbnail
		want     []string
		not      []string
		empty    bool
		playMark bool
	}{
		{"item, no play", thumbnail{Src: "https://i.example/t.jpg", Link: "https://b.example/p", Alt: `A "quoted" <title> & more`},
			[]string{`<img src="https://i.example/t.jpg" alt="A &#34;quoted&#34; &lt;title&gt; &amp; more" style="display:block;max-width:100%;height:auto;border:0;"/>`,
				`<a href="https://b.example/p" rel="noopener noreferrer" target="_blank"><img`},
			[]string{"width=", "Play"}, false, false},
		{"digest video", thumbnail{Src: "https://i.example/t.jpg?a=1&b=2", Link: "https://www.youtube.com/watch?v=x&t=1", Alt: "V", Width: digestThumbWidth, Video: video},
			[]string{`src="https://i.example/t.jpg?a=1&amp;b=2"`, ` width="160" style="display:block;width:160px;max-width:100%;height:auto;border:0;"`, "▶\ufe0e Play · 3:45</a>"},
			nil, false, true},
		{"no link", thumbnail{Src: "https://i.example/t.jpg", Alt: "x", Video: &videoPost{}},
			[]string{"<td><img", "▶\ufe0e Play</td>"}, []string{"<a "}, false, true},
		{"tracker", thumbnail{Src: "http://feeds.feedburner.com/~f/Ex?i=1", Link: "https://b.example/p"}, nil, nil, true, false},
		{"not http", thumbnail{Src: "javascript:alert(1)"}, nil, nil, true, false},
		{"relative", thumbnail{Src: "/t.jpg"}, nil, nil, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.th.html()
			if (got == "") != tc.empty {
				t.Fatalf("html() = %q, want empty %v", got, tc.empty)
			}
			if got == "" {
				return
			}
			wantContains(t, got, tc.want, tc.not)
			if strings.Contains(got, "Play") != tc.playMark {
				t.Errorf("play mark %v, want %v", !tc.playMark, tc.playMark)
			}
			if again := renderFragment(got, false); again != got {
				t.Errorf("not stable under parsing:\n%s\n->\n%s", got, again)
			}
			doc := "<!DOCTYPE html><html><head></head><body><div>" + got + "</div></body></html>"
			if bad := testutil.MalformedHTML(doc); len(bad) > 0 || !testutil.HTMLDocStable(doc) {
				t.Errorf("malformed %v or unstable: %s", bad, got)
			}
		})
	}
}

func TestWithCaption(t *testing.T) {
	photo := `<p><a href="https://b.example/p"><img src="https://b.example/p.jpg" alt="Frost on  the kale"></a></p>`
	long := `<p>` + strings.Repeat("word ", imageLedWords) + `</p>` + photo
	altCaption := `<p style="` + captionStyle + `">Frost on the kale</p>`
	tests := []struct {
		name, content string
		media         model.ItemMedia
		html, text    []string
		not           []string
	}{
		{"alt as caption", photo, model.ItemMedia{},
			[]string{`</p><p style="` + captionStyle + `">Frost on the kale</p>`}, []string{"[Frost on the kale]"}, nil},
		{"alt and description", photo, model.ItemMedia{Description: "First frost: https://b.example/notes"},
			[]string{">Frost on the kale</p>", `<a href="https://b.example/notes"`},
			[]string{"[Frost on the kale]", "First frost: https://b.example/notes"}, nil},
		{"html description", photo, model.ItemMedia{Description: "<b>Cold</b> night<script>x()</script>", DescriptionHTML: true},
			[]string{"<b>Cold</b> night"}, []string{"Cold night"}, []string{"script", "x()"}},
		{"alt already said", `<p>Frost on the kale</p>` + photo, model.ItemMedia{}, []string{`>Picture: <a href="https://b.example/p.jpg"`}, nil, []string{altCaption}},
		{"description already said", `<p>Cold night.</p>` + photo, model.ItemMedia{Description: "Cold night."}, nil, nil, []string{"Cold night.</p><p>Cold night."}},
		{"enough words", long, model.ItemMedia{Description: "Extra"}, nil, nil, []string{captionStyle, "Extra"}},
		{"no image", `<p>Short.</p>`, model.ItemMedia{Description: "Extra"}, nil, nil, []string{"Extra"}},
		{"no alt", `<p><img src="https://b.example/p.jpg"></p>`, model.ItemMedia{}, []string{`>Picture: <a href="https://b.example/p.jpg"`, `>p.jpg</a> from b.example</p>`}, nil, []string{"×"}},
		{"news picture over a paragraph", `<p><img src="/m/harbour-640.jpg" width="640" height="427"></p><p>` + strings.Repeat("word ", 40) + `</p>`, model.ItemMedia{},
			[]string{`>Picture: <a href="https://b.example/m/harbour-640.jpg"`, `>harbour-640.jpg</a> from b.example · 640 × 427</p>`}, nil, nil},
		{"size not a number", `<p><img src="/m/x.jpg" width="100%" height="427"></p>`, model.ItemMedia{}, []string{`>x.jpg</a> from b.example</p>`}, nil, []string{"×"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := withCaption(PrepareHTML(tc.content, "https://b.example/p"), tc.media, "https://b.example/p")
			wantContains(t, c.HTML, tc.html, tc.not)
			wantContains(t, c.Text, tc.text, tc.not)
			if again := renderFragment(c.HTML, false); again != c.HTML {
				t.Errorf("not stable under parsing:\n%s\n->\n%s", c.HTML, again)
			}
		})
	}
}
