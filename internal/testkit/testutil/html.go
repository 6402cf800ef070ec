package testutil

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true, "input": true,
	"link": true, "meta": true, "param": true, "source": true, "track": true, "wbr": true,
}

// blockElements may not sit inside a <p>: their start tag would close it.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "details": true, "div": true, "dl": true,
	"fieldset": true, "figcaption": true, "figure": true, "footer": true, "form": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "header": true, "hgroup": true, "hr": true, "main": true,
	"menu": true, "nav": true, "ol": true, "p": true, "pre": true, "section": true, "table": true, "ul": true,
}

// MalformedHTML checks HTML strictly, token by token, without a parser's
// error recovery: every element is closed by its own end tag, in order; no
// void element has an end tag and no other element is self-closed; no
// block element opens inside a <p>. It returns the problems found (nil for
// well-formed HTML). Comments and the doctype are ignored.
func MalformedHTML(doc string) []string {
	var bad []string
	var stack []string
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			for _, open := range stack {
				bad = append(bad, "<"+open+"> never closed")
			}
			return bad
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			n := string(name)
			if blockElements[n] {
				for _, open := range stack {
					if open == "p" {
						bad = append(bad, "<"+n+"> inside <p>")
						break
					}
				}
			}
			if !voidElements[n] {
				if tt == html.SelfClosingTagToken {
					bad = append(bad, "<"+n+"/> self-closed")
					continue
				}
				stack = append(stack, n)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			n := string(name)
			switch {
			case voidElements[n]:
				bad = append(bad, "</"+n+"> end tag of a void element")
			case len(stack) == 0:
				bad = append(bad, "</"+n+"> closes nothing")
			case stack[len(stack)-1] != n:
				bad = append(bad, fmt.Sprintf("</%s> closes <%s>", n, stack[len(stack)-1]))
				stack = stack[:len(stack)-1]
			default:
				stack = stack[:len(stack)-1]
			}
		}
	}
}

// HTMLDocStable reports whether a whole HTML document comes out of parsing
// and rendering (golang.org/x/net/html) as a document that parsing and
// rendering leave unchanged: the parser found nothing it had to move.
func HTMLDocStable(doc string) bool {
	once, err := reRender(doc)
	if err != nil {
		return false
	}
	twice, err := reRender(once)
	return err == nil && once == twice
}

func reRender(doc string) (string, error) {
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = html.Render(&b, n)
	return b.String(), err
}
