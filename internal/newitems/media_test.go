package newitems

import (
	"reflect"
	"testing"
)

// youTubeFeed has the shape of a YouTube channel feed: Atom entries with
// no content, whose text and picture are in media:group.
const youTubeFeed = `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns:media="http://search.yahoo.com/mrss/" xmlns="http://www.w3.org/2005/Atom">
 <title>Some Channel</title>
 <link rel="alternate" href="https://www.youtube.com/channel/UC123"/>
 <entry>
  <id>yt:video:abc123</id>
  <yt:videoId>abc123</yt:videoId>
  <title>A new video</title>
  <link rel="alternate" href="https://www.youtube.com/watch?v=abc123"/>
  <published>2025-01-02T10:00:00+00:00</published>
  <media:group>
   <media:title>A new video</media:title>
   <media:content url="https://www.youtube.com/v/abc123?version=3" type="application/x-shockwave-flash" width="640" height="390"/>
   <media:thumbnail url="https://i1.ytimg.com/vi/abc123/hqdefault.jpg" width="480" height="360"/>
   <media:description>Links: https://example.com/notes
Second line.</media:description>
  </media:group>
 </entry>
</feed>`

// podcastFeed is an RSS podcast: an mp3 enclosure and iTunes tags.
const podcastFeed = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:media="http://search.yahoo.com/mrss/">
<channel><title>Pod</title><link>https://pod.example/</link>
 <item>
  <title>Episode 1</title>
  <link>https://pod.example/1</link>
  <guid>ep1</guid>
  <enclosure url="/media/ep1.mp3" length="12345678" type="audio/mpeg"/>
  <media:content url="https://pod.example/media/ep1.mp3" type="audio/mpeg" fileSize="12345678"/>
  <media:content url="https://pod.example/media/ep1.ogg" type="audio/ogg" duration="61"/>
  <itunes:duration>1:02:03</itunes:duration>
  <itunes:image href="https://pod.example/ep1.jpg"/>
 </item>
 <item>
  <title>Paper</title>
  <guid>p1</guid>
  <enclosure url="https://pod.example/paper.pdf" length="bogus" type="application/pdf; charset=binary"/>
  <enclosure url="javascript:alert(1)" type="audio/mpeg"/>
 </item>
</channel></rss>`

const jsonFeedAttachments = `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[
 {"id":"1","url":"https://j.example/1","content_text":"hi","image":"https://j.example/1.png",
  "attachments":[{"url":"https://j.example/1.m4a","mime_type":"audio/x-m4a","size_in_bytes":89970236,"duration_in_seconds":6629}]}]}`

// channel9Feed has the shape of a Channel 9 episode: a video enclosure
// with a placeholder length, and a media:group of the same episode as
// mp3, three mp4s, a streaming manifest and an embedded player, the
// thumbnails at item level. Six boxes before; one medium.
const channel9Feed = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
<channel><title>Show</title><link>https://c9.example/Shows/Show</link>
 <item>
  <title>Episode 12</title>
  <link>https://c9.example/Shows/Show/Episode-12</link>
  <description><![CDATA[<p>In this episode we look at the new release.</p>]]></description>
  <enclosure url="https://cdn.c9.example/ch9/ep/file_high.mp4" length="1" type="video/mp4"/>
  <media:group>
   <media:content url="https://cdn.c9.example/ch9/ep/file.mp3" expression="full" duration="1830" fileSize="1" type="audio/mp3" medium="audio"/>
   <media:content url="https://cdn.c9.example/ch9/ep/file.mp4" expression="full" duration="1830" fileSize="98000000" type="video/mp4" medium="video"/>
   <media:content url="https://cdn.c9.example/ch9/ep/file_high.mp4" expression="full" duration="1830" fileSize="412000000" type="video/mp4" medium="video"/>
   <media:content url="https://cdn.c9.example/ch9/ep/file_mid.mp4" expression="full" duration="1830" fileSize="1" type="video/mp4" medium="video"/>
   <media:content url="https://cdn.c9.example/ch9/ep/file.ism/manifest" expression="full" duration="1830" fileSize="1" type="application/vnd.ms-sstr+xml"/>
   <media:content url="https://www.youtube-nocookie.com/embed/xyz" expression="full" duration="1830" fileSize="1" type="text/html" medium="video"/>
  </media:group>
  <media:thumbnail url="https://cdn.c9.example/ch9/ep/file_960.jpg" height="540" width="960"/>
  <media:thumbnail url="https://cdn.c9.example/ch9/ep/file_100.jpg" height="56" width="100"/>
 </item>
</channel></rss>`

// groupOnlyFeed has a media:group of encodings and no enclosure: its
// default variant is the one file.
const groupOnlyFeed = `<?xml version="1.0"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>V</title><link>https://v.example/</link>
 <item><title>A</title><link>https://v.example/a</link>
  <media:group>
   <media:content url="https://v.example/a_360.mp4" type="video/mp4" fileSize="3000000"/>
   <media:content url="https://v.example/a_720.mp4" type="video/mp4" fileSize="9000000" isDefault="true"/>
   <media:thumbnail url="https://v.example/a.jpg"/>
  </media:group>
 </item>
</channel></rss>`

// omnyFeed has the shape of a podcast hosted on Omny: the enclosure
// repeated as media:content with another tracking query and a web player.
const omnyFeed = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
<channel><title>Die Lage</title><link>https://omny.example/shows/lage</link>
 <item>
  <title>Folge 1</title>
  <link>https://omny.example/shows/lage/ep1</link>
  <description><![CDATA[<p>Was heute wichtig ist.</p>]]></description>
  <itunes:duration>1346</itunes:duration>
  <itunes:image href="https://www.omny.example/shows/ep/image.jpg"/>
  <enclosure url="https://traffic.omny.example/d/clips/ab/audio.mp3?utm_source=Podcast" length="21554816" type="audio/mpeg"/>
  <media:content url="https://traffic.omny.example/d/clips/ab/audio.mp3?utm_source=Podcast&amp;in_playlist=x" type="audio/mpeg">
   <media:player url="https://omny.example/shows/lage/ep1/embed"/>
  </media:content>
 </item>
</channel></rss>`

// vimeoFeed has the shape of a Vimeo channel's RSS: the thumbnail and
// the player inside a media:content without a URL.
const vimeoFeed = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>Staff Picks</title><link>https://vimeo.com/channels/staffpicks</link>
 <item>
  <title>A short film</title>
  <link>https://vimeo.com/123456</link>
  <description><![CDATA[<p><a href="https://vimeo.com/123456"><img src="https://i.vimeocdn.example/video/1_200x150.jpg" alt="" /></a></p><p>A film about the sea.</p><p><strong>Cast:</strong> <a href="https://vimeo.com/someone">Someone</a></p>]]></description>
  <media:content>
   <media:player url="https://player.vimeo.com/video/123456"/>
   <media:thumbnail height="540" width="960" url="https://i.vimeocdn.example/video/1_960x540.jpg"/>
   <media:title>A short film</media:title>
  </media:content>
 </item>
</channel></rss>`

func TestItemMedia(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []Media
	}{
		{"youtube", youTubeFeed, []Media{{
			Thumbnail:   "https://i1.ytimg.com/vi/abc123/hqdefault.jpg",
			Description: "Links: https://example.com/notes\nSecond line.",
			Player:      "https://www.youtube.com/watch?v=abc123",
		}}},
		{"podcast", podcastFeed, []Media{
			{
				// The media:content repeats the enclosure, the ogg is
				// another encoding of it: one episode, one file.
				Enclosures: []Enclosure{
					{URL: "https://pod.example/media/ep1.mp3", Type: "audio/mpeg", Length: 12345678, Duration: 3723},
				},
				Thumbnail: "https://pod.example/ep1.jpg",
			},
			{Enclosures: []Enclosure{{URL: "https://pod.example/paper.pdf", Type: "application/pdf"}}},
		}},
		{"channel 9 episode", channel9Feed, []Media{{
			Enclosures: []Enclosure{{URL: "https://cdn.c9.example/ch9/ep/file_high.mp4", Type: "video/mp4", Length: 412000000, Duration: 1830}},
			Thumbnail:  "https://cdn.c9.example/ch9/ep/file_960.jpg",
			Player:     "https://www.youtube-nocookie.com/embed/xyz",
		}}},
		{"group without enclosure", groupOnlyFeed, []Media{{
			Enclosures: []Enclosure{{URL: "https://v.example/a_720.mp4", Type: "video/mp4", Length: 9000000}},
			Thumbnail:  "https://v.example/a.jpg",
		}}},
		{"omny podcast", omnyFeed, []Media{{
			Enclosures: []Enclosure{{URL: "https://traffic.omny.example/d/clips/ab/audio.mp3?utm_source=Podcast", Type: "audio/mpeg", Length: 21554816, Duration: 1346}},
			Thumbnail:  "https://www.omny.example/shows/ep/image.jpg",
			Player:     "https://omny.example/shows/lage/ep1/embed",
		}}},
		{"vimeo", vimeoFeed, []Media{{
			Thumbnail: "https://i.vimeocdn.example/video/1_960x540.jpg",
			Player:    "https://player.vimeo.com/video/123456",
		}}},
		{"json feed", jsonFeedAttachments, []Media{{
			Enclosures: []Enclosure{{URL: "https://j.example/1.m4a", Type: "audio/x-m4a", Length: 89970236, Duration: 6629}},
			Thumbnail:  "https://j.example/1.png",
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.doc), "", "https://pod.example/feed")
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Items) != len(tc.want) {
				t.Fatalf("%d items, want %d", len(f.Items), len(tc.want))
			}
			for i, it := range f.Items {
				if !reflect.DeepEqual(it.Media, tc.want[i]) {
					t.Errorf("item %d media:\n got %+v\nwant %+v", i, it.Media, tc.want[i])
				}
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"", 0}, {"3723", 3723}, {"62:03", 3723}, {"1:02:03", 3723}, {" 01:02:03.250 ", 3723},
		{"1:60:00", 0}, {"a:b", 0}, {"-5", 0}, {"1:2:3:4", 0}, {"45 min", 0},
	}
	for _, tc := range tests {
		if got := ParseDuration(tc.in); got != tc.want {
			t.Errorf("ParseDuration(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestItemPlayer reads where a video plays from each place feeds put it.
func TestItemPlayer(t *testing.T) {
	const head = `<?xml version="1.0"?><rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:yt="http://www.youtube.com/xml/schemas/2015"><channel><title>V</title><link>https://v.example/</link><item><title>t</title><link>https://v.example/1</link>`
	const tail = `</item></channel></rss>`
	tests := []struct{ name, item, want string }{
		{"media:player", `<media:player url="https://vimeo.com/12345"/>`, "https://vimeo.com/12345"},
		{"player in a group", `<media:group><media:player url="/watch/1"/></media:group>`, "https://v.example/watch/1"},
		{"player in a content", `<media:content url="https://v.example/1.mp4" type="video/mp4"><media:player url="https://v.example/play/1"/></media:content>`, "https://v.example/play/1"},
		{"yt:videoId", `<yt:videoId>abc_123-X</yt:videoId>`, "https://www.youtube.com/watch?v=abc_123-X"},
		{"yt:videoId that is not an id", `<yt:videoId>a/b?c</yt:videoId>`, ""},
		{"flash content", `<media:content url="https://www.youtube.com/v/abc?version=3" type="application/x-shockwave-flash"/>`, "https://www.youtube.com/v/abc?version=3"},
		{"player before flash content", `<media:player url="https://v.example/p"/><media:content url="https://www.youtube.com/v/abc" type="application/x-shockwave-flash"/>`, "https://v.example/p"},
		{"script player", `<media:player url="javascript:alert(1)"/>`, ""},
		{"video file only", `<enclosure url="https://v.example/1.mp4" type="video/mp4" length="1"/>`, ""},
		{"nothing", ``, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(head+tc.item+tail), "", "https://v.example/feed")
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Items) != 1 {
				t.Fatalf("%d items", len(f.Items))
			}
			if got := f.Items[0].Media.Player; got != tc.want {
				t.Errorf("Player = %q, want %q", got, tc.want)
			}
		})
	}
}
