package sites

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The corpus files the scenarios are built from (real feeds, rewritten per
// scenario in memory; none is copied into the repository).
const (
	scriptingRSS   = "feedvalidator/testcases/rss/must/rss20_spec_sample_noerror.xml" // Scripting News, RSS 2.0, GUIDs
	rssWorldRSS    = "feedvalidator/testcases/rss/must/atom_link.xml"                 // RSS World, no GUIDs, links and dates
	nokiaAtom      = "feedparser/tests/wellformed/sanitize/large_atom_feed_that_needs_css_sanitisation.xml"
	inessentialJSN = "jsonfeed/realworld_feedjira_sample_feeds_json_feed.json"
)

// Content types the scenarios serve feeds with.
const (
	TypeRSS  = "application/rss+xml"
	TypeAtom = "application/atom+xml"
	TypeJSON = "application/feed+json"
)

// corpus reads corpus files once per Scenarios call.
type corpus struct {
	dir   string
	files map[string][]byte
	err   error
}

func (c *corpus) read(rel string) []byte {
	if b, ok := c.files[rel]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(rel)))
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("sites: corpus file: %w", err)
	}
	c.files[rel] = b
	return b
}

// rewrite replaces each old string with its new one (pairs), longest
// match first where they overlap.
func rewrite(b []byte, pairs ...string) []byte {
	return []byte(strings.NewReplacer(pairs...).Replace(string(b)))
}

var (
	rssWorldItemLink = regexp.MustCompile(`<link>https://rssworld\.test/\?p=(\d+)</link>`)
	rssPubDate       = regexp.MustCompile(`<pubDate>[^<]*</pubDate>`)
	nokiaEntryID     = regexp.MustCompile(`<id>tag:touchnokia\.ru,2009://1\.(\d+)</id>`)
	nokiaEntryLink   = regexp.MustCompile(`<link rel="alternate" type="text/html" href="http://touchnokia\.ru/2009/[^"]*"`)
)

// ghostImport is the RSS World feed as a Ghost import republishes it:
// every post under a new link (/p/post-N/), a new GUID, and the import
// day as its date; the titles are kept.
func ghostImport(wordpress []byte) []byte {
	b := rssWorldItemLink.ReplaceAll(wordpress,
		[]byte(`<link>https://rssworld.test/p/post-$1/</link><guid isPermaLink="false">6651f0c2a9e4b3001c$1</guid>`))
	return rssPubDate.ReplaceAll(b, []byte(`<pubDate>Mon, 01 Jul 2024 09:00:00 +0000</pubDate>`))
}

// youTubeFeed is the Atom corpus feed as a YouTube channel's: video ids as
// entry ids, watch links, the channel's page as the site link.
func youTubeFeed(atom []byte, self string) []byte {
	b := nokiaEntryID.ReplaceAll(atom, []byte(`<id>yt:video:vid$1</id>`))
	n := 0
	b = nokiaEntryLink.ReplaceAllFunc(b, func([]byte) []byte {
		n++
		return fmt.Appendf(nil, `<link rel="alternate" type="text/html" href="https://www.youtube.com/watch?v=v%03d"`, n)
	})
	return rewrite(b, "http://touchnokia.ru/atom.xml", self, "http://touchnokia.ru/", "https://www.youtube.com/user/touchnokia")
}

// withNewerPosts returns a JSON Feed with posts prepended (id, title,
// date_published) and its feed_url set to feedURL.
func withNewerPosts(jsonFeed []byte, feedURL string, posts ...[3]string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(jsonFeed, &doc); err != nil {
		return nil, fmt.Errorf("sites: JSON Feed: %w", err)
	}
	items, _ := doc["items"].([]any)
	var fresh []any
	for _, p := range posts {
		fresh = append(fresh, map[string]any{"id": p[0], "url": p[0], "title": p[1], "date_published": p[2],
			"content_html": "<p>" + p[1] + "</p>"})
	}
	doc["items"] = append(fresh, items...)
	doc["feed_url"] = feedURL
	return json.MarshalIndent(doc, "", "  ")
}

// page returns a small HTML page with the given head links and body.
func page(title, head, body string) string {
	return "<!doctype html><html><head><meta charset=utf-8><title>" + title + "</title>" + head +
		"</head><body>" + body + "</body></html>"
}

// alternate is a <link rel="alternate"> to a feed.
func alternate(typ, href string) string {
	return `<link rel="alternate" type="` + typ + `" title="Feed" href="` + href + `">`
}
