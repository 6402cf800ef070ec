package mailer

import (
	"fmt"
	"html"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/feedmail/feedmail/internal/model"
)

// itemBody is the content an email shows for an item: its own HTML when
// that shows anything (with a caption when it is little more than an
// image: withCaption), under the feed's thumbnail with its play bar when
// the post is a video (videoBody); else, when the feed gave media (a
// YouTube video, a podcast without show notes), the media description
// (text, linkified, or HTML when the feed said so) under the thumbnail,
// which links to the post and for a video carries a play mark; else
// nothing (Content.Empty), and the caller offers the link. title is the
// thumbnail's alt text.
func itemBody(contentHTML string, m model.ItemMedia, base, link, title string, video *videoPost) Content {
	if c, ok := videoBody(contentHTML, m, base, link, title, video); ok {
		return c
	}
	c := PrepareHTML(contentHTML, base)
	if !c.Empty() {
		return withCaption(c, m, base)
	}
	desc := mediaDescriptionHTML(m)
	if m.Thumbnail == "" && desc == "" {
		return c
	}
	mc := withThumbnail(desc, thumbnail{Src: m.Thumbnail, Link: link, Alt: title, Video: video}, base)
	mc.Pixels += c.Pixels
	return mc
}

// videoBody is the content of a video post that has text of its own and
// a thumbnail from its feed (Vimeo, Channel 9): the thumbnail with its
// play bar above the text, without the image the text opened with (the
// same picture, smaller). It reports false for any other post.
func videoBody(contentHTML string, m model.ItemMedia, base, link, title string, video *videoPost) (Content, bool) {
	if video == nil || video.Audio || m.Thumbnail == "" {
		return Content{}, false
	}
	th := thumbnail{Src: m.Thumbnail, Link: link, Alt: title, Video: video}
	if th.html() == "" {
		return Content{}, false
	}
	rest, _ := withoutLeadingImage(contentHTML)
	if PrepareHTML(rest, base).Empty() {
		return Content{}, false
	}
	return withThumbnail(rest, th, base), true
}

// mediaDescriptionHTML is the item's media description as HTML: as the
// feed gave it when it said HTML, else its text linkified.
func mediaDescriptionHTML(m model.ItemMedia) string {
	if m.DescriptionHTML {
		return m.Description
	}
	return TextToHTML(m.Description)
}

// withThumbnail prepares fragment with the thumbnail th above it in the
// HTML part. The text part leaves the thumbnail out when fragment has text:
// there it would only repeat the post's link.
func withThumbnail(fragment string, th thumbnail, base string) Content {
	c := PrepareHTML(fragment, base)
	block := th.html()
	if block == "" {
		return c
	}
	if c.Text == "" {
		c.Text = PrepareHTML(thumbnailHTML(th.Src, th.Link, th.Alt), base).Text
	}
	c.HTML = block + c.HTML
	return c
}

// thumbnailHTML is a paragraph with the image src, linked to link when
// there is one, with alt as its alt text; "" without src.
func thumbnailHTML(src, link, alt string) string {
	if src == "" {
		return ""
	}
	img := `<img src="` + html.EscapeString(src) + `" alt="` + html.EscapeString(alt) + `">`
	if link != "" {
		img = `<a href="` + html.EscapeString(link) + `">` + img + `</a>`
	}
	return "<p>" + img + "</p>"
}

// bareURL finds http(s) URLs in plain text; blankLine separates
// paragraphs.
var (
	bareURL   = regexp.MustCompile(`https?://[^\s<>"]+`)
	blankLine = regexp.MustCompile(`\n\s*\n`)
)

// TextToHTML turns plain text (a media description, a digest excerpt) into
// HTML: escaped, paragraphs at blank lines, line breaks kept, and every
// http(s) URL made a link (trailing punctuation stays outside it).
func TextToHTML(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n")
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, para := range blankLine.Split(s, -1) {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		b.WriteString("<p>")
		for i, line := range strings.Split(para, "\n") {
			if i > 0 {
				b.WriteString("<br>\n")
			}
			b.WriteString(linkify(strings.TrimSpace(line)))
		}
		b.WriteString("</p>\n")
	}
	return b.String()
}

// linkify escapes a line of text and makes its URLs links.
func linkify(line string) string {
	var b strings.Builder
	last := 0
	for _, loc := range bareURL.FindAllStringIndex(line, -1) {
		u := strings.TrimRight(line[loc[0]:loc[1]], ".,;:!?'\")]}")
		// A closing parenthesis belongs to the URL when it opened one.
		if strings.Count(u, "(") > strings.Count(u, ")") && loc[0]+len(u) < loc[1] && line[loc[0]+len(u)] == ')' {
			u += ")"
		}
		end := loc[0] + len(u)
		b.WriteString(html.EscapeString(line[last:loc[0]]))
		if _, err := url.Parse(u); err == nil {
			b.WriteString(`<a href="` + html.EscapeString(u) + `">` + html.EscapeString(u) + `</a>`)
		} else {
			b.WriteString(html.EscapeString(u))
		}
		last = end
	}
	b.WriteString(html.EscapeString(line[last:]))
	return b.String()
}

// enclosureView is one attached file as the templates show it: a heading
// ("Audio"), the link (its text the file name) and what is known of it
// ("MP3 · 11.8 MB · 1:02:03").
type enclosureView struct {
	Kind, URL, Name, Details string
}

// enclosureViews returns the views of the enclosures whose URL is an
// absolute http(s) URL that can go into an email.
func enclosureViews(es []model.Enclosure) []enclosureView {
	var out []enclosureView
	for _, e := range es {
		u := bodyURL(e.URL, false)
		if u == "" {
			continue
		}
		kind, format := describeType(e.Type, u)
		var details []string
		if format != "" {
			details = append(details, format)
		}
		if e.Length >= minShownSize(kind) {
			details = append(details, formatSize(e.Length))
		}
		if e.Duration > 0 {
			details = append(details, formatDuration(e.Duration))
		}
		out = append(out, enclosureView{Kind: kind, URL: u, Name: fileName(u), Details: strings.Join(details, " · ")})
	}
	return out
}

// minShownSize is the least size shown for a file of kind: feeds write
// placeholders (0, 1, 123) where they do not know it, and no recording is
// under 10 KB, while a small document may be a few hundred bytes.
func minShownSize(kind string) int64 {
	if kind == "Audio" || kind == "Video" {
		return 10_000
	}
	return 100
}

// knownFormats names common enclosure types.
var knownFormats = map[string]string{
	"audio/mpeg": "MP3", "audio/mp3": "MP3", "audio/mp4": "M4A", "audio/x-m4a": "M4A", "audio/m4a": "M4A",
	"audio/aac": "AAC", "audio/ogg": "Ogg", "audio/opus": "Opus", "audio/flac": "FLAC", "audio/wav": "WAV",
	"audio/x-wav": "WAV", "video/mp4": "MP4", "video/x-m4v": "M4V", "video/webm": "WebM", "video/quicktime": "QuickTime",
	"video/ogg": "Ogg", "application/pdf": "PDF", "application/epub+zip": "EPUB", "application/zip": "ZIP",
	"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WebP",
}

// describeType returns what kind of file an enclosure is ("Audio",
// "Video", "Document", "Image", "File") and its format ("MP3", "PDF", or
// the MIME type itself when it has no common name). Without a type, the
// file name's extension decides.
func describeType(mime, u string) (kind, format string) {
	mime = strings.ToLower(strings.TrimSpace(mime))
	if mime == "" || !strings.Contains(mime, "/") {
		switch ext := strings.ToLower(path.Ext(fileName(u))); ext {
		case ".mp3", ".m4a", ".ogg", ".opus", ".aac", ".flac", ".wav":
			return "Audio", strings.ToUpper(ext[1:])
		case ".mp4", ".m4v", ".webm", ".mov":
			return "Video", strings.ToUpper(ext[1:])
		case ".pdf":
			return "Document", "PDF"
		}
		switch mime { // Media RSS medium="audio" and the like
		case "audio", "video", "image":
			return strings.ToUpper(mime[:1]) + mime[1:], ""
		case "document":
			return "Document", ""
		}
		return "File", ""
	}
	format = knownFormats[mime]
	if format == "" {
		format = mime
	}
	switch {
	case strings.HasPrefix(mime, "audio/"):
		kind = "Audio"
	case strings.HasPrefix(mime, "video/"):
		kind = "Video"
	case strings.HasPrefix(mime, "image/"):
		kind = "Image"
	case mime == "application/pdf" || mime == "application/epub+zip" || strings.HasPrefix(mime, "text/") ||
		strings.Contains(mime, "document") || strings.Contains(mime, "msword"):
		kind = "Document"
	default:
		kind = "File"
	}
	return kind, format
}

// fileName is the last path segment of a URL, unescaped, or its host when
// the path has none.
func fileName(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	name := path.Base(p.Path)
	if name == "/" || name == "." || name == "" {
		return p.Host
	}
	return name
}

// formatSize renders a byte count: "950 bytes", "12 KB", "11.8 MB",
// "1.2 GB" (decimal units, as file sizes are shown on the web).
func formatSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1000*1000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	case n < 1000*1000*1000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + " MB"
	default:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e9)) + " GB"
	}
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// formatDuration renders seconds as a player shows them: "0:45", "58:03",
// "1:02:03".
func formatDuration(s int64) string {
	h, m, sec := s/3600, s%3600/60, s%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}
