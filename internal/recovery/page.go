package recovery

import (
	"bytes"
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/feedmail/feedmail/internal/newitems"
)

// Bounds on what one page adds to an attempt.
const (
	maxAlternates = 4
	maxAnchors    = 3
)

// pageLinks is what an HTML page points at that may be a feed.
type pageLinks struct {
	alternates []string // <link rel="alternate"> feeds, in document order
	anchors    []string // feed-looking <a href>, in document order
	channelID  string   // a YouTube channel id named on the page
}

// readPage returns the feeds the page at pageURL advertises (through
// newitems.Discover), its feed-looking <a> links (href containing feed,
// rss, atom or .xml, not already advertised, not the page itself) and a
// YouTube channel id ("channelId":"UC…", or a /channel/UC… link), within
// maxAlternates and maxAnchors.
func readPage(body []byte, pageURL string) pageLinks {
	var pl pageLinks
	seen := map[string]bool{normURL(pageURL): true}
	for _, a := range newitems.Discover(body, pageURL) {
		if u := normURL(a.URL); u != "" && !seen[u] && len(pl.alternates) < maxAlternates {
			seen[u] = true
			pl.alternates = append(pl.alternates, u)
		}
	}
	for _, href := range anchorHrefs(body) {
		if len(pl.anchors) == maxAnchors {
			break
		}
		u := resolve(pageURL, href)
		if u == "" || seen[u] || !feedLooking(u) {
			continue
		}
		seen[u] = true
		pl.anchors = append(pl.anchors, u)
	}
	if m := ytChannelID.FindSubmatch(body); m != nil {
		pl.channelID = string(m[1])
	} else if m := ytChannelLink.FindSubmatch(body); m != nil {
		pl.channelID = string(m[1])
	}
	return pl
}

var (
	ytChannelID   = regexp.MustCompile(`"(?:channelId|externalId)"\s*:\s*"(UC[0-9A-Za-z_-]{22})"`)
	ytChannelLink = regexp.MustCompile(`youtube\.com/channel/(UC[0-9A-Za-z_-]{22})`)
)

// feedLooking reports whether a link's path or query looks like a feed's.
func feedLooking(u string) bool {
	p := parse(u)
	if p == nil {
		return false
	}
	s := strings.ToLower(p.EscapedPath() + "?" + p.RawQuery)
	for _, w := range []string{"feed", "rss", "atom", ".xml"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// anchorHrefs returns the href of every <a> in the page, in order.
func anchorHrefs(body []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			if atom.Lookup(name) != atom.A {
				continue
			}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "href" {
					out = append(out, string(v))
					break
				}
			}
		}
	}
}

// loginPage reports whether an answer is a login wall: 401 or 403, or a
// page with a password field or a sign-in title. A "Sign in" button on an
// ordinary page does not count.
func loginPage(status int, body []byte) bool {
	if status == 401 || status == 403 {
		return true
	}
	lower := bytes.ToLower(body)
	if passwordField.Match(lower) {
		return true
	}
	if m := titleTag.FindSubmatch(lower); m != nil {
		t := string(m[1])
		return strings.Contains(t, "sign in") || strings.Contains(t, "log in") || strings.Contains(t, "login")
	}
	return false
}

var (
	passwordField = regexp.MustCompile(`<input[^>]*type\s*=\s*["']?password`)
	titleTag      = regexp.MustCompile(`<title[^>]*>([^<]*)</title>`)
)

// parkingWords are what parked and for-sale pages say, and the names of
// the parking services that serve them.
var parkingWords = []string{
	"domain is for sale", "domain may be for sale", "buy this domain", "this domain is parked",
	"domain has expired", "parked free", "parkingcrew", "sedoparking", "bodis.com", "parklogic",
}

// parkedPage reports whether an HTML page is a parked or for-sale domain's.
func parkedPage(body []byte) bool {
	lower := bytes.ToLower(body)
	for _, w := range parkingWords {
		if bytes.Contains(lower, []byte(w)) {
			return true
		}
	}
	return false
}
