package article

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Sample is one post of a feed as the classifier sees it: the feed's
// content and, when its article was fetched, the article's length.
type Sample struct {
	Content      string
	ArticleChars int // 0: not fetched
}

// Verdict is whether a feed's posts look cut short, and why in words.
type Verdict struct {
	Truncated bool
	CutShort  int // how many of the posts looked cut short
	Looked    int // of how many
	Reason    string
}

// Thresholds of the classifier.
const (
	// shortText is the most text, in characters, a post ending in "…" may
	// have to count as cut short (a long post may end in an ellipsis).
	shortText = 1500
	// pageRatio: a post whose article is this many times longer than its
	// content was cut short.
	pageRatio = 3
	// minSamples is the fewest posts a verdict is given on.
	minSamples = 2
)

// readMore matches the text of a link that continues a post elsewhere.
var readMore = regexp.MustCompile(`(?i)^\W*(read|continue|keep|view|see)( reading| more| the (rest|full|whole|entire)( post| article| story)?| on)|^\W*more\W*$|^\W*(lire la suite|weiterlesen|leer más|leggi tutto)`)

// readMoreTail matches a post's text that ends in a "read more" without
// a link.
var readMoreTail = regexp.MustCompile(`(?i)(read more|continue reading|keep reading|read the (rest|full|whole) (post|article|story))\W*$`)

// Truncated returns the verdict on a feed from its newest posts: cut short
// when more than half of them are (minSamples at least). A post is cut
// short when it is short and ends in an ellipsis, ends with a "read more"
// link, or its fetched article is pageRatio times longer.
func Truncated(samples []Sample) Verdict {
	v := Verdict{Looked: len(samples)}
	why := map[string]int{}
	for _, s := range samples {
		if r := cutShort(s); r != "" {
			v.CutShort++
			why[r]++
		}
	}
	v.Truncated = v.Looked >= minSamples && v.CutShort*2 > v.Looked
	if v.Truncated {
		best := ""
		for r, n := range why {
			if best == "" || n > why[best] || (n == why[best] && r < best) {
				best = r
			}
		}
		v.Reason = fmt.Sprintf("%d of its %d newest posts look cut short (%s)", v.CutShort, v.Looked, best)
	}
	return v
}

// cutShort returns why one post looks cut short, "" when it does not.
func cutShort(s Sample) string {
	text, lastLink := textOf(s.Content)
	n := utf8.RuneCountInString(text)
	switch {
	case lastLink != "" && readMore.MatchString(lastLink) && strings.HasSuffix(text, lastLink),
		n < shortText && readMoreTail.MatchString(text):
		return "a “read more” link"
	case n < shortText && endsInEllipsis(text):
		return "an ellipsis"
	case s.ArticleChars > 0 && n*pageRatio < s.ArticleChars:
		return "much shorter than the page"
	}
	return ""
}

// endsInEllipsis reports whether text ends in "…", "...", "[…]" or "[...]".
func endsInEllipsis(text string) bool {
	t := strings.TrimRight(text, " ])»\"'”")
	return strings.HasSuffix(t, "…") || strings.HasSuffix(t, "...")
}

// textOf returns the text of an HTML fragment on one line, and the text
// of its last link.
func textOf(fragment string) (text, lastLink string) {
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b, link strings.Builder
	inLink, skip := false, 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(lastLink), " ")
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "a":
				inLink = true
				link.Reset()
			case "script", "style":
				skip++
			}
			b.WriteByte(' ')
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "a":
				if inLink {
					lastLink = link.String()
				}
				inLink = false
			case "script", "style":
				skip = max(skip-1, 0)
			}
			b.WriteByte(' ')
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := string(z.Text())
			b.WriteString(t)
			if inLink {
				link.WriteString(t)
			} else if strings.TrimSpace(t) != "" {
				lastLink = ""
			}
		}
	}
}
