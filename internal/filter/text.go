package filter

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/text/cases"
)

// MaxText is how much of a post's text (title and content) is searched,
// in bytes.
const MaxText = 64 << 10

// fold folds the case of s for caseless comparison. A cases.Caser keeps
// state, so each call makes its own.
func fold(s string) string { return cases.Fold().String(s) }

// isWordRune reports whether r is part of a word: a letter, digit or
// combining mark.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// unspaced are the scripts written without spaces between words: each of
// their characters is a word of its own.
var unspaced = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

// splitWords returns the words of folded text s, in order (see the
// package comment for what a word is).
func splitWords(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case unicode.In(r, unspaced...) && !unicode.IsMark(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			out = append(out, string(r))
		case isWordRune(r):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// inlineTags join the text around them into one word ("<b>x</b>y" is
// "xy"); every other tag separates words.
var inlineTags = map[string]bool{"a": true, "abbr": true, "b": true, "bdi": true, "bdo": true, "cite": true,
	"code": true, "data": true, "del": true, "dfn": true, "em": true, "font": true, "i": true, "ins": true,
	"kbd": true, "mark": true, "q": true, "s": true, "samp": true, "small": true, "span": true, "strike": true,
	"strong": true, "sub": true, "sup": true, "time": true, "tt": true, "u": true, "var": true, "wbr": true}

// skipTags hold no text a reader sees.
var skipTags = map[string]bool{"script": true, "style": true, "template": true, "noscript": true,
	"iframe": true, "object": true, "svg": true, "math": true, "head": true, "title": true}

// htmlText is the text of HTML fragment s, at most max bytes of it (cut
// at a rune boundary): tags that separate words become a space, and the
// text of script, style and the like is dropped.
func htmlText(s string, max int) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for b.Len() < max {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			skipTag := skipTags[string(name)]
			switch {
			case skipTag && tt == html.StartTagToken:
				skip++
			case skipTag && tt == html.EndTagToken && skip > 0:
				skip--
			case !inlineTags[string(name)]:
				b.WriteByte(' ')
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
	return cut(b.String(), max)
}

// cut shortens s to at most max bytes without splitting a rune.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// utf8RuneStart reports whether b can start a UTF-8 encoded rune.
func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
