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
	default:
		return itemBody(e.ItemHTML, e.Media, base, link, title, video)
	}
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
