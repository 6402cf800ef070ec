package mailer

import (
	"strings"

	nethtml "golang.org/x/net/html"
)

// HTMLToLine reduces HTML to its text on one line, white space folded:
// tags that separate words (blocks, line and table breaks, images) become a
// space, inline tags (a, em, strong, span, code…) nothing, so "<a>x</a>."
// stays "x.". The text of script, style and similar elements is dropped.
// It does not sanitize; the result is text, not HTML.
func HTMLToLine(s string) string {
	z := nethtml.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken, nethtml.EndTagToken:
			name, _ := z.TagName()
			if skipTags[string(name)] {
				switch {
				case tt == nethtml.StartTagToken:
					skip++
				case tt == nethtml.EndTagToken && skip > 0:
					skip--
				}
				continue
			}
			if blockTags[string(name)] || lineTags[string(name)] || wordBreakTags[string(name)] {
				b.WriteByte(' ')
			}
		case nethtml.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

// wordBreakTags separate words without starting a block or a line.
var wordBreakTags = map[string]bool{
	"br": true, "img": true, "td": true, "th": true, "video": true, "audio": true, "embed": true,
	"center": true, "form": true, "fieldset": true, "legend": true, "menu": true, "body": true, "html": true,
}
