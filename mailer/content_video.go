package mailer

import (
	"net/url"
	"regexp"
	"strings"

	nethtml "golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/model"
)

// videoHosts are the sites known to play videos, with the name an email
// gives them ("Watch on YouTube") and the paths of their pages that are one
// video (nil: every page is): a post linking there is a video. A host
// matches its subdomains too; any player embedded from one is a video.
var videoHosts = []struct {
	host, name string
	pages      []string
}{
	{"youtube.com", "YouTube", []string{"/watch", "/shorts/", "/live/", "/embed/", "/v/"}},
	{"youtu.be", "YouTube", nil},
	{"youtube-nocookie.com", "YouTube", nil},
	{"vimeo.com", "Vimeo", []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7", "/8", "/9", "/video/"}},
	{"dailymotion.com", "Dailymotion", []string{"/video/", "/embed/"}},
	{"dai.ly", "Dailymotion", nil},
	{"twitch.tv", "Twitch", []string{"/videos/"}},
	{"rumble.com", "Rumble", []string{"/v", "/embed/"}},
	{"ted.com", "TED", []string{"/talks/"}},
	{"wistia.com", "Wistia", []string{"/medias/", "/embed/"}},
	{"loom.com", "Loom", []string{"/share/", "/embed/"}},
}

// videoSite returns the name of the video site raw (a URL) is on, or ""
// when its host is not one of videoHosts, and whether the page is one
// video (its path is one of the site's video pages).
func videoSite(raw string) (name string, page bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, v := range videoHosts {
		if host != v.host && !strings.HasSuffix(host, "."+v.host) {
			continue
		}
		page = v.pages == nil
		for _, p := range v.pages {
			page = page || strings.HasPrefix(u.Path, p)
		}
		return v.name, page
	}
	return "", false
}

// videoSiteName is videoSite's name alone.
func videoSiteName(raw string) string {
	name, _ := videoSite(raw)
	return name
}

// videoPost is what an email says of a post that plays (a video, or an
// audio episode with a web player): the site its link plays it on, named
// for the call to action ("YouTube", or the link's host), its length in
// seconds when the feed gave one, and whether it is sound only.
type videoPost struct {
	Site     string
	Duration int64
	Audio    bool
}

// Watch is the label of the call to action, its verb by the medium:
// "Watch on YouTube", "Listen on omny.fm".
func (v videoPost) Watch() string {
	switch {
	case v.Audio && v.Site == "":
		return "Listen to the episode"
	case v.Audio:
		return "Listen on " + v.Site
	case v.Site == "":
		return "Watch the video"
	}
	return "Watch on " + v.Site
}

// postVideo reports whether a post plays, and what the email says of it.
// A post is a video when it attaches a video file, embeds a player of a
// known video site or a <video> in its content, links to a video's page on
// a known video site, or the feed names where it plays (Media RSS player,
// YouTube's videoId: m.Player) and attaches no sound file; with a player
// and only sound files (a podcast on Omny) it is audio. contentHTML is the
// post's content as the feed gave it.
func postVideo(link, contentHTML string, m model.ItemMedia) (videoPost, bool) {
	v := videoPost{Site: videoSiteName(link)}
	if v.Site == "" {
		v.Site = hostOf(link)
	}
	var audio *model.Enclosure
	for i, e := range m.Enclosures {
		switch kind, _ := describeType(e.Type, e.URL); {
		case kind == "Video":
			return videoPost{Site: v.Site, Duration: e.Duration}, true
		case kind == "Audio" && audio == nil:
			audio = &m.Enclosures[i]
		}
	}
	if _, page := videoSite(link); page || embedsVideo(contentHTML) {
		return v, true
	}
	if m.Player == "" {
		return videoPost{}, false
	}
	if audio != nil {
		v.Audio, v.Duration = true, audio.Duration
	}
	return v, true
}

// playerTag finds the start of a tag embedsVideo looks at.
var playerTag = regexp.MustCompile(`(?i)<(?:video|iframe|embed|object)`)

// embedsVideo reports whether feed HTML plays a video: a <video> element,
// or an <iframe>, <embed> or <object> whose source is on a known video
// site.
func embedsVideo(contentHTML string) bool {
	if !playerTag.MatchString(contentHTML) { // most posts: no need to tokenize
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
