package mailer

import (
	"net/url"
	"strings"

	nethtml "golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/store"
)

// videoHosts are the sites known to play videos, with the name an email
// gives them ("Watch on YouTube"). A host matches its subdomains too.
var videoHosts = []struct{ host, name string }{
	{"youtube.com", "YouTube"},
	{"youtu.be", "YouTube"},
	{"youtube-nocookie.com", "YouTube"},
	{"vimeo.com", "Vimeo"},
	{"dailymotion.com", "Dailymotion"},
	{"dai.ly", "Dailymotion"},
	{"twitch.tv", "Twitch"},
	{"rumble.com", "Rumble"},
	{"ted.com", "TED"},
	{"wistia.com", "Wistia"},
	{"loom.com", "Loom"},
}

// videoSiteName returns the name of the video site raw (a URL) is on, or
// "" when its host is not one of videoHosts.
func videoSiteName(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, v := range videoHosts {
		if host == v.host || strings.HasSuffix(host, "."+v.host) {
			return v.name
		}
	}
	return ""
}

// videoPost is what an email says of a post that is a video: the site its
// link plays it on, named for the call to action ("YouTube", or the
// link's host), and its length in seconds when the feed gave one.
type videoPost struct {
	Site     string
	Duration int64
}

// Watch is the label of the call to action: "Watch on YouTube".
func (v videoPost) Watch() string {
	if v.Site == "" {
		return "Watch the video"
	}
	return "Watch on " + v.Site
}

// postVideo reports whether a post is a video, and what the email says of
// it. A post is a video when the feed names where it plays (Media RSS
// player, YouTube's videoId: m.Player), attaches a video file, embeds a
// player of a known video site or a <video> in its content, or links to a
// known video site. contentHTML is the post's content as the feed gave it.
func postVideo(link, contentHTML string, m store.ItemMedia) (videoPost, bool) {
	v := videoPost{Site: videoSiteName(link)}
	if v.Site == "" {
		v.Site = hostOf(link)
	}
	for _, e := range m.Enclosures {
		if kind, _ := describeType(e.Type, e.URL); kind == "Video" {
			return videoPost{Site: v.Site, Duration: e.Duration}, true
		}
	}
	if m.Player != "" || videoSiteName(link) != "" || embedsVideo(contentHTML) {
		return v, true
	}
	return videoPost{}, false
}

// embedsVideo reports whether feed HTML plays a video: a <video> element,
// or an <iframe>, <embed> or <object> whose source is on a known video
// site.
func embedsVideo(contentHTML string) bool {
	if !strings.Contains(contentHTML, "<") {
		return false
	}
	z := nethtml.NewTokenizer(strings.NewReader(contentHTML))
	for {
		switch z.Next() {
		case nethtml.ErrorToken:
			return false
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "video":
				return true
			case "iframe", "embed":
				if videoSiteName(attr(tok, "src")) != "" {
					return true
				}
			case "object":
				if videoSiteName(attr(tok, "data")) != "" {
					return true
				}
			}
		}
	}
}
