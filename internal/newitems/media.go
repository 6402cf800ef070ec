package newitems

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/mmcdole/gofeed"
	ext "github.com/mmcdole/gofeed/extensions"
	gjson "github.com/mmcdole/gofeed/json"
)

// Limits on what an item's media may hold, so a hostile feed cannot make
// one item's row or email arbitrarily large.
const (
	maxEnclosures       = 10
	maxMediaDescription = 20000 // bytes
)

// Media is what a feed says about an item's media.
type Media struct {
	// Enclosures are the files attached to the item, one per medium, in
	// feed order: RSS <enclosure>, Atom <link rel="enclosure">, JSON Feed
	// attachments, then Media RSS <media:content> that is not an image or
	// a player (YouTube's media:content is a Flash player, and the item
	// link already leads to the video) nor a variant of a file listed
	// (variants.go); one file per <media:group>. At most maxEnclosures.
	Enclosures []Enclosure
	// Thumbnail is an image standing for the item: <media:thumbnail> (also
	// inside <media:group> or <media:content>), an image
	// <media:content>, <itunes:image>, the JSON Feed image, an image
	// enclosure. Absolute http(s), or "".
	Thumbnail string
	// Description is <media:description> (also inside <media:group> or
	// <media:content>), else <itunes:summary> or <itunes:subtitle>: plain
	// text unless DescriptionHTML (Media RSS type="html").
	Description     string
	DescriptionHTML bool
	// Player is where the item's video plays, which makes the item a
	// video: <media:player> (also inside <media:group> or
	// <media:content>), the watch page of a <yt:videoId>, or a player
	// <media:content> (YouTube's Flash URL). Absolute http(s), or "".
	Player string
}

// Enclosure is one file attached to an item. Zero Length or Duration means
// the feed did not say (or said something that is not a number).
type Enclosure struct {
	URL      string // absolute http(s)
	Type     string // MIME type as given, lower-cased
	Length   int64  // bytes
	Duration int64  // seconds
}

// itemMedia gathers the media of gi (ji is the original JSON Feed item, or
// nil), with URLs resolved against base.
func itemMedia(gi *gofeed.Item, ji *gjson.Item, base *url.URL) Media {
	media := gi.Extensions["media"]
	contents := mediaContents(media)
	encs := enclosureSet{seen: map[string]bool{}}
	for _, e := range feedEnclosures(gi, ji, base) {
		encs.add(e)
	}
	imageContent, playerContent := encs.addContents(base, media["content"])
	for _, g := range media["group"] {
		img, player := encs.addGroup(base, g.Children["content"])
		imageContent, playerContent = firstNonEmpty(imageContent, img), firstNonEmpty(playerContent, player)
	}
	m := Media{Enclosures: encs.list}
	m.Description, m.DescriptionHTML = itemDescription(gi, media, contents)
	m.Thumbnail = itemThumbnail(gi, base, media, contents, imageContent, m.Enclosures)
	setEpisodeDuration(m.Enclosures, itunesDuration(gi))
	m.Player = itemPlayer(gi, base, media, contents, playerContent)
	return m
}

// itemPlayer returns where the item's video plays, most specific first:
// a <media:player> (the item's, its group's, its content's), the YouTube
// watch page of its <yt:videoId>, then the first player <media:content>;
// "" when none is an http(s) URL.
func itemPlayer(gi *gofeed.Item, base *url.URL, media map[string][]ext.Extension, contents []ext.Extension, playerContent string) string {
	if p := firstMediaURL(base, media["player"]); p != "" {
		return p
	}
	for _, g := range media["group"] {
		if p := firstMediaURL(base, g.Children["player"]); p != "" {
			return p
		}
	}
	for _, c := range contents {
		if p := firstMediaURL(base, c.Children["player"]); p != "" {
			return p
		}
	}
	if ids := gi.Extensions["yt"]["videoId"]; len(ids) > 0 {
		if id := strings.TrimSpace(ids[0].Value); id != "" && !strings.ContainsAny(id, "/?#&% ") {
			return "https://www.youtube.com/watch?v=" + url.QueryEscape(id)
		}
	}
	return playerContent
}

// enclosureSet collects an item's enclosures in feed order, so that one
// URL is listed once and a hostile feed cannot attach more than
// maxEnclosures files.
type enclosureSet struct {
	list []Enclosure
	seen map[string]bool
}

// add appends e unless it has no URL, repeats one, or the set is full.
func (s *enclosureSet) add(e Enclosure) {
	if e.URL == "" || s.seen[e.URL] || len(s.list) >= maxEnclosures {
		return
	}
	s.seen[e.URL] = true
	s.list = append(s.list, e)
}

// feedEnclosures returns the item's RSS, Atom or JSON Feed enclosures, in
// feed order, with the JSON Feed durations (which gofeed drops) put back by
// position. Entries without an http(s) URL have URL "": add skips them.
func feedEnclosures(gi *gofeed.Item, ji *gjson.Item, base *url.URL) []Enclosure {
	var jsonDur []int64
	if ji != nil && ji.Attachments != nil {
		for _, a := range *ji.Attachments {
			jsonDur = append(jsonDur, a.DurationInSeconds)
		}
	}
	var out []Enclosure
	for i, e := range gi.Enclosures {
		if e == nil {
			continue
		}
		enc := Enclosure{URL: httpURL(base, e.URL), Type: mimeType(e.Type), Length: positive(e.Length)}
		if i < len(jsonDur) && jsonDur[i] > 0 {
			enc.Duration = jsonDur[i]
		}
		out = append(out, enc)
	}
	return out
}

// mediaContents returns the item's Media RSS <media:content>: directly in
// the item, then inside each <media:group>, since feeds use either.
func mediaContents(media map[string][]ext.Extension) []ext.Extension {
	contents := append([]ext.Extension(nil), media["content"]...)
	for _, g := range media["group"] {
		contents = append(contents, g.Children["content"]...)
	}
	return contents
}

// addContents adds the files among the item's own <media:content> (not
// in a group) as enclosures, each unless it is a variant of one listed
// already, and returns the URLs of the first image and the first web
// player among them (or ""): a thumbnail and a player candidate rather
// than files, since images and web players are not enclosures.
func (s *enclosureSet) addContents(base *url.URL, contents []ext.Extension) (imageContent, playerContent string) {
	for _, c := range contents {
		e, image, player := contentFile(base, c)
		switch {
		case image != "":
			imageContent = firstNonEmpty(imageContent, image)
		case player != "":
			playerContent = firstNonEmpty(playerContent, player)
		case e.URL != "":
			s.addVariant(e)
		}
	}
	return imageContent, playerContent
}

// contentFile reads one <media:content>: the file it is, or its URL as
// image or as web player; all empty without an http(s) URL.
func contentFile(base *url.URL, c ext.Extension) (e Enclosure, image, player string) {
	u := httpURL(base, c.Attrs["url"])
	typ := mimeType(c.Attrs["type"])
	medium := strings.ToLower(strings.TrimSpace(c.Attrs["medium"]))
	switch {
	case u == "":
	case medium == "image" || strings.HasPrefix(typ, "image/"):
		image = u
	case isPlayerType(typ):
		player = u
	default:
		if typ == "" && medium != "" {
			typ = medium // "audio", "video", "document"
		}
		e = Enclosure{URL: u, Type: typ, Length: positive(c.Attrs["fileSize"]), Duration: positive(c.Attrs["duration"])}
	}
	return e, image, player
}

// itemDescription returns the item's media description and whether it is
// HTML: the item's own <media:description>, then its group's, then its
// content's, then iTunes (plain text); cut to maxMediaDescription bytes so
// a hostile feed cannot make the row or email arbitrarily large.
func itemDescription(gi *gofeed.Item, media map[string][]ext.Extension, contents []ext.Extension) (string, bool) {
	d, isHTML := mediaDescription(media["description"])
	if d == "" {
		d, isHTML = groupDescription(media["group"])
	}
	if d == "" {
		d, isHTML = contentDescription(contents)
	}
	if d == "" && gi.ITunesExt != nil {
		d, isHTML = strings.TrimSpace(firstNonEmpty(gi.ITunesExt.Summary, gi.ITunesExt.Subtitle)), false
	}
	return truncateUTF8(d, maxMediaDescription), isHTML
}

// itemThumbnail returns the image standing for the item, most specific
// first: the item's own <media:thumbnail>, its group's, its content's, an
// image <media:content>, <itunes:image>, the feed item's image, then the
// first image enclosure; "" when none is an http(s) URL.
func itemThumbnail(gi *gofeed.Item, base *url.URL, media map[string][]ext.Extension, contents []ext.Extension, imageContent string, encs []Enclosure) string {
	if t := firstNonEmpty(firstMediaURL(base, media["thumbnail"]), groupThumbnail(base, media["group"]), contentThumbnail(base, contents)); t != "" {
		return t
	}
	var giImage string
	if gi.Image != nil {
		giImage = gi.Image.URL
	}
	if t := httpURL(base, firstNonEmpty(imageContent, itunesImage(gi), giImage)); t != "" {
		return t
	}
	for _, e := range encs {
		if strings.HasPrefix(e.Type, "image/") {
			return e.URL
		}
	}
	return ""
}

// itunesImage returns the <itunes:image> href as given (unresolved), from
// the parsed iTunes extension or, when gofeed did not fill it, the raw
// extension; "" when absent.
func itunesImage(gi *gofeed.Item) string {
	if gi.ITunesExt != nil {
		return gi.ITunesExt.Image
	}
	if im := gi.Extensions["itunes"]["image"]; len(im) > 0 {
		return im[0].Attrs["href"]
	}
	return ""
}

// setEpisodeDuration gives d (the iTunes duration, seconds) to the first
// audio or video enclosure without one, since iTunes describes the episode
// and that file is it. Nothing changes when d is not positive.
func setEpisodeDuration(encs []Enclosure, d int64) {
	if d <= 0 {
		return
	}
	for i := range encs {
		e := &encs[i]
		if e.Duration == 0 && (strings.HasPrefix(e.Type, "audio/") || strings.HasPrefix(e.Type, "video/") || e.Type == "" || e.Type == "audio" || e.Type == "video") {
			e.Duration = d
			return
		}
	}
}

// isPlayerType reports whether a media:content type is a web player rather
// than a file to download (YouTube gives application/x-shockwave-flash).
func isPlayerType(t string) bool {
	return t == "application/x-shockwave-flash" || t == "text/html" || t == "application/xhtml+xml"
}

// firstMediaURL is the first url attribute in es that is an http(s) URL.
func firstMediaURL(base *url.URL, es []ext.Extension) string {
	for _, e := range es {
		if u := httpURL(base, e.Attrs["url"]); u != "" {
			return u
		}
	}
	return ""
}

func groupThumbnail(base *url.URL, groups []ext.Extension) string {
	for _, g := range groups {
		if u := firstMediaURL(base, g.Children["thumbnail"]); u != "" {
			return u
		}
	}
	return ""
}

func groupDescription(groups []ext.Extension) (string, bool) {
	for _, g := range groups {
		if d, isHTML := mediaDescription(g.Children["description"]); d != "" {
			return d, isHTML
		}
	}
	return "", false
}

// contentThumbnail returns the first <media:thumbnail> inside contents
// (http(s) only, else ""), for items that give one only per file.
func contentThumbnail(base *url.URL, contents []ext.Extension) string {
	for _, c := range contents {
		if u := firstMediaURL(base, c.Children["thumbnail"]); u != "" {
			return u
		}
	}
	return ""
}

// contentDescription returns the first non-blank <media:description>
// inside contents and whether it is HTML, for items that describe only
// their files.
func contentDescription(contents []ext.Extension) (string, bool) {
	for _, c := range contents {
		if d, isHTML := mediaDescription(c.Children["description"]); d != "" {
			return d, isHTML
		}
	}
	return "", false
}

// mediaDescription returns the first non-blank <media:description> and
// whether it is HTML (type="html"; the default is plain text).
func mediaDescription(es []ext.Extension) (string, bool) {
	for _, e := range es {
		if v := strings.TrimSpace(demoronizeString(e.Value)); v != "" {
			return v, strings.EqualFold(strings.TrimSpace(e.Attrs["type"]), "html")
		}
	}
	return "", false
}

// itunesDuration reads <itunes:duration> (seconds, MM:SS or HH:MM:SS) in
// seconds; 0 when absent or not understood.
func itunesDuration(gi *gofeed.Item) int64 {
	s := ""
	if gi.ITunesExt != nil {
		s = gi.ITunesExt.Duration
	} else if d := gi.Extensions["itunes"]["duration"]; len(d) > 0 {
		s = d[0].Value
	}
	return ParseDuration(s)
}

// ParseDuration reads a duration as podcasts write it: "3723", "62:03",
// "1:02:03" (fractions of a second are dropped). It returns seconds, or 0
// for anything else.
func ParseDuration(s string) int64 {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ":")
	if s == "" || len(parts) > 3 {
		return 0
	}
	var total int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 || (i > 0 && n >= 60) || n > 1<<40 {
			return 0
		}
		total = total*60 + n
	}
	return total
}

// httpURL resolves ref against base and returns it when it is an absolute
// http(s) URL, else "".
func httpURL(base *url.URL, ref string) string {
	u := absURL(base, ref)
	if l := strings.ToLower(u); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
		return u
	}
	return ""
}
