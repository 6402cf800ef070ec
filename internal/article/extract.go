package article

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
)

// MinTextChars is the least text an extracted article must have: below it
// the page held no article readability could find (a login wall, a
// script-only page), and the feed's own content is better.
const MinTextChars = 200

// ErrNoArticle is returned when the page has no readable article.
var ErrNoArticle = errors.New("no article found on the page")

// Article is the main text of a page.
type Article struct {
	// HTML is the article's content: links and images absolute (against
	// the page's URL), unsanitized.
	HTML string
	// TextChars is its length as text, in characters.
	TextChars int
	Title     string
}

// Extract returns the article of an HTML page found at pageURL (relative
// links in it resolve against pageURL), or an error wrapping ErrNoArticle
// when the page has none worth showing.
func Extract(page []byte, pageURL string) (Article, error) {
	u, err := url.Parse(pageURL)
	if err != nil || !u.IsAbs() {
		return Article{}, fmt.Errorf("page address %q: not absolute", pageURL)
	}
	p := readability.NewParser()
	p.DisableJSONLD = true
	a, err := p.Parse(bytes.NewReader(page), u)
	if err != nil {
		return Article{}, fmt.Errorf("%w: %w", ErrNoArticle, err)
	}
	if a.Node == nil {
		return Article{}, ErrNoArticle
	}
	var h, t strings.Builder
	if err := a.RenderHTML(&h); err != nil {
		return Article{}, fmt.Errorf("render article: %w", err)
	}
	if err := a.RenderText(&t); err != nil {
		return Article{}, fmt.Errorf("render article text: %w", err)
	}
	n := utf8.RuneCountInString(strings.Join(strings.Fields(t.String()), " "))
	if n < MinTextChars {
		return Article{}, fmt.Errorf("%w: %d characters of text", ErrNoArticle, n)
	}
	return Article{HTML: h.String(), TextChars: n, Title: a.Title()}, nil
}
