package newitems

import (
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// cleanTitle trims a title, decodes HTML entities (feeds often escape twice)
// and folds runs of white space, newlines included, into single spaces.
func cleanTitle(s string) string {
	return strings.Join(strings.Fields(demoronizeString(html.UnescapeString(s))), " ")
}

// demoronizeString applies demoronize to text that came out of the XML
// parser, where a character reference such as &#146; became U+0092.
func demoronizeString(s string) string {
	return string(demoronize([]byte(s)))
}

// absURL resolves ref against base (which may be nil) and returns it, or ""
// when the result is not an http(s) URL. A relative reference with no base
// to resolve it against is returned as is. A reference Go cannot parse is
// kept only if it plainly starts with http:// or https://.
func absURL(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		if l := strings.ToLower(ref); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
			return ref
		}
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "": // "" only when there was no base
		return u.String()
	}
	return ""
}

// personName returns the name (else the e-mail address) of the first
// person that has one.
func personName(people []*gofeed.Person) string {
	for _, q := range people {
		if q == nil {
			continue
		}
		if s := strings.TrimSpace(q.Name); s != "" {
			return s
		}
		if s := strings.TrimSpace(q.Email); s != "" {
			return s
		}
	}
	return ""
}

// mediaTitle is the Media RSS title of an item (<media:title>, also inside
// <media:group>), the fallback for items without a title.
func mediaTitle(gi *gofeed.Item) string {
	media := gi.Extensions["media"]
	for _, e := range media["title"] {
		if strings.TrimSpace(e.Value) != "" {
			return e.Value
		}
	}
	for _, g := range media["group"] {
		for _, e := range g.Children["title"] {
			if strings.TrimSpace(e.Value) != "" {
				return e.Value
			}
		}
	}
	return ""
}

// timeOf returns *t in UTC, or the zero time for nil.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// first returns the first string of s, or "".
func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// firstNonEmpty returns the first of s that is not blank, or "".
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// textToHTML turns plain text (JSON Feed content_text, summary) into HTML:
// escaped, with line breaks kept.
func textToHTML(s string) string {
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(html.EscapeString(s), "\n", "<br>\n")
}

// positive parses a decimal count; 0 when it is not a positive number.
func positive(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// mimeType lower-cases a MIME type and drops its parameters.
func mimeType(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
