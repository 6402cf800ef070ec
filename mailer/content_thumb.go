package mailer

import (
	"html"
	"slices"
	"strconv"
	"strings"

	nethtml "golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/model"
)

// digestThumbWidth is the width in CSS pixels of every thumbnail in a
// digest: one modest size, so no entry's picture takes over the issue.
const digestThumbWidth = 160

// thumbnail is an image standing for a post (its media thumbnail), shown
// above what the email says of it.
type thumbnail struct {
	Src, Link, Alt string
	// Width is the image's width in CSS pixels; 0 lets it fill the column
	// (an item email) up to its own size.
	Width int
	// Video, set, puts a play mark under the image.
	Video *videoPost
}

// thumbStyle is the inline style of a thumbnail's image and play bar.
const (
	thumbImgStyle  = "display:block;max-width:100%;height:auto;border:0;"
	thumbPlayStyle = "display:block;padding:6px 10px;background-color:#1f2328;color:#ffffff;font-size:14px;line-height:1.4;font-weight:600;text-decoration:none;"
)

// html returns the thumbnail's markup: a one-column table holding the
// image, linked to the post, and for a video a dark play bar under it
// ("▶ Play · 3:45") as wide as the image, so the mark sits on the
// thumbnail in every mail client (overlays need CSS most clients drop). It
// returns "" when Src is not an http(s) URL or is a known tracker. The
// markup is written as the HTML parser renders it, so the email is stable
// under parsing.
func (t thumbnail) html() string {
	src := bodyURL(t.Src, false)
	if src == "" || isTrackerURL(src) {
		return ""
	}
	link := bodyURL(t.Link, false)
	var b strings.Builder
	b.WriteString(`<table role="presentation" cellpadding="0" cellspacing="0" style="margin:0 0 12px;border-collapse:collapse;"><tbody><tr><td>`)
	img := `<img src="` + escAttr(src) + `" alt="` + escAttr(t.Alt) + `"`
	style := thumbImgStyle
	if t.Width > 0 {
		w := strconv.Itoa(t.Width)
		img += ` width="` + w + `"`
		style = "display:block;width:" + w + "px;max-width:100%;height:auto;border:0;"
	}
	img += ` style="` + style + `"/>`
	writeLinked(&b, link, "", img)
	b.WriteString(`</td></tr>`)
	if t.Video != nil {
		mark := "▶\ufe0e Play"
		if t.Video.Duration > 0 {
			mark += " · " + formatDuration(t.Video.Duration)
		}
		b.WriteString(`<tr><td style="background-color:#1f2328;">`)
		writeLinked(&b, link, thumbPlayStyle, html.EscapeString(mark))
		b.WriteString(`</td></tr>`)
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

// writeLinked writes inner, inside a link to link (with style) when there
// is one.
func writeLinked(b *strings.Builder, link, style, inner string) {
	if link == "" {
		b.WriteString(inner)
		return
	}
	// Attributes in the order the parser leaves a link's in a table cell.
	b.WriteString(`<a href="` + escAttr(link) + `" rel="noopener noreferrer"`)
	if style != "" {
		b.WriteString(` style="` + style + `"`)
	}
	b.WriteString(` target="_blank">` + inner + `</a>`)
}

// escAttr escapes an attribute value as the HTML renderer does, so our
// markup renders back to itself.
func escAttr(s string) string {
	return attrEscaper.Replace(s)
}

// attrEscaper is escAttr's replacer, built once.
var attrEscaper = strings.NewReplacer(`&`, "&amp;", `"`, "&#34;", "<", "&lt;", ">", "&gt;", "'", "&#39;")

// imageLedWords is the number of words under which a post that shows an
// image is led by it (a photo, a news picture over a paragraph): it gets a
// caption.
const imageLedWords = 60

// captionStyle is the inline style of a caption under an image-led post.
const captionStyle = "margin:8px 0 0;font-size:14px;line-height:1.4;color:#59636e;"

// withCaption returns c, and when c is led by an image (it shows one and
// fewer than imageLedWords words), with a caption under it: the image's
// alt text (in the HTML part: the text part shows it already, as [alt])
// unless the post says it already, a line naming the picture and linking
// to it ("Picture: harbour.jpg from news.example · 640 × 427"), and the post's media
// description unless the post says it. A reader whose client blocks
// images still learns what the post shows and can open it, and spam
// filters, which score an image with little text, see text.
func withCaption(c Content, m model.ItemMedia, base string) Content {
	if !strings.Contains(c.HTML, "<img") {
		return c
	}
	shown := HTMLToLine(c.HTML)
	if len(strings.Fields(shown)) >= imageLedWords {
		return c
	}
	img := firstImage(c.HTML)
	if alt := strings.Join(strings.Fields(attr(img, "alt")), " "); alt != "" && !strings.Contains(shown, alt) {
		c.HTML += `<p style="` + captionStyle + `">` + html.EscapeString(alt) + `</p>`
	}
	c.HTML += pictureLine(img)
	if desc := mediaDescriptionHTML(m); desc != "" && !strings.Contains(shown, HTMLToLine(desc)) {
		extra := PrepareHTML(desc, base)
		c.HTML += extra.HTML
		if extra.Text != "" {
			c.Text = strings.TrimRight(c.Text, "\n") + "\n\n" + extra.Text
		}
	}
	return c
}

// pictureLine is a caption line naming the image img and linking to it,
// with its host and its size when the post gave one: "Picture:
// harbour.jpg from news.example · 640 × 427"; "" when its source is not
// an http(s) URL.
func pictureLine(img nethtml.Token) string {
	src := bodyURL(attr(img, "src"), false)
	if src == "" {
		return ""
	}
	link := PrepareHTML(`<a href="`+html.EscapeString(src)+`">`+html.EscapeString(fileName(src))+`</a>`, "").HTML
	if !strings.HasPrefix(link, "<a ") {
		return ""
	}
	line := "Picture: " + link
	if h := hostOf(src); h != "" {
		line += " from " + html.EscapeString(h)
	}
	w, h := attr(img, "width"), attr(img, "height")
	if isDigits(w) && isDigits(h) {
		line += " · " + w + " × " + h
	}
	return `<p style="` + captionStyle + `">` + line + `</p>`
}

// isDigits reports whether s is a short decimal number.
func isDigits(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// firstImage is the first image tag in sanitized HTML (zero without one).
func firstImage(s string) nethtml.Token {
	z := nethtml.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case nethtml.ErrorToken:
			return nethtml.Token{}
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			if tok := z.Token(); tok.Data == "img" {
				return tok
			}
		}
	}
}

// imageHosts names where the images in sanitized HTML load from, for the
// footer's line about them: "news.example.net", "a.example and
// b.example", "3 sites"; "" without images.
func imageHosts(s string) string {
	if !strings.Contains(s, "<img") {
		return ""
	}
	var hosts []string
	z := nethtml.NewTokenizer(strings.NewReader(s))
	for z.Next() != nethtml.ErrorToken {
		tok := z.Token()
		if tok.Data != "img" || (tok.Type != nethtml.StartTagToken && tok.Type != nethtml.SelfClosingTagToken) {
			continue
		}
		if h := hostOf(attr(tok, "src")); h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	switch len(hosts) {
	case 0:
		return ""
	case 1:
		return hosts[0]
	case 2:
		return hosts[0] + " and " + hosts[1]
	}
	return strconv.Itoa(len(hosts)) + " sites"
}
