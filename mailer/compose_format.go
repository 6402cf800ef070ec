package mailer

import (
	"html"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
)

// SummaryWords is how many words of a post a "summary" email shows.
const SummaryWords = 60

// formattedBody is the content an item email shows in the subscription's
// format: the whole post (itemBody), its summary, or nothing for "title"
// (the title, link and enclosures are shown whatever the format).
func formattedBody(e ItemEmail, base, link, title string, video *videoPost) Content {
	switch e.Format {
	case store.FormatTitle:
		return Content{}
	case store.FormatSummary:
		text := Summary(e.ItemHTML, SummaryWords)
		if text == "" && e.Media.Description != "" {
			desc := e.Media.Description
			if !e.Media.DescriptionHTML {
				desc = html.EscapeString(desc)
			}
			text = Summary(desc, SummaryWords)
		}
		if text == "" {
			return Content{}
		}
		return PrepareHTML(TextToHTML(text), base)
	case store.FormatArticle:
		if strings.TrimSpace(e.Article) == "" {
			return itemBody(e.ItemHTML, e.Media, base, link, title, video)
		}
		return itemBody(e.Article, e.Media, firstNonEmpty(bodyURL(e.ArticleURL, false), base), link, title, video)
	default:
		return itemBody(e.ItemHTML, e.Media, base, link, title, video)
	}
}

// ArticleMissingNote is the line an "article" email carries when the
// post's page gave no article and the feed's own text stands in for it.
const ArticleMissingNote = "The full article could not be read from the site; this is the feed's own text."

// articleNote is the note of an item email: ArticleMissingNote for an
// "article" email without its article, else "".
func articleNote(e ItemEmail) string {
	if e.Format == store.FormatArticle && strings.TrimSpace(e.Article) == "" {
		return ArticleMissingNote
	}
	return ""
}

// withNote returns c with note as its first line, in the HTML (escaped,
// in italics) and in the text (in brackets), as an item email shows its
// note; c itself when note is "".
func withNote(c Content, note string) Content {
	if note == "" {
		return c
	}
	c.HTML = "<p><em>" + html.EscapeString(note) + "</em></p>\n" + c.HTML
	c.Text = "(" + note + ")\n\n" + c.Text
	return c
}

// Summary is the first n words of feed HTML as plain text on one line,
// with "…" when there were more; "" when the HTML has no text.
func Summary(contentHTML string, n int) string {
	words := strings.Fields(HTMLToLine(contentHTML))
	if len(words) <= n {
		return strings.Join(words, " ")
	}
	return strings.TrimRight(strings.Join(words[:n], " "), ",.;:-–—") + "…"
}
