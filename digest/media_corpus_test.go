package digest_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	nethtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// corpusFeedDirs are the folders of the corpus that hold feeds.
var corpusFeedDirs = []string{"feedparser", "feedvalidator", "jsonfeed"}

// corpusMedia converts parsed media as the poller does.
func corpusMedia(m newitems.Media) model.ItemMedia {
	sm := model.ItemMedia{Thumbnail: m.Thumbnail, Description: m.Description, DescriptionHTML: m.DescriptionHTML,
		Player: m.Player}
	for _, e := range m.Enclosures {
		sm.Enclosures = append(sm.Enclosures, model.Enclosure{URL: e.URL, Type: e.Type, Length: e.Length, Duration: e.Duration})
	}
	return sm
}

var urlRun = regexp.MustCompile(`https?://\S+`)

// TestCorpusEmails renders every item of every feed of the corpus that has
// items, as if each were new: its instant email, and a digest of the
// feed's items. No email may have an empty body, every enclosure must be
// linked in both parts, no tracking pixel may remain, and the HTML must be
// well formed by a strict token-level check, with the feed content a fixed
// point of parsing and rendering.
func TestCorpusEmails(t *testing.T) {
	var files []testutil.CorpusFile
	for _, d := range corpusFeedDirs {
		files = append(files, testutil.ReadCorpus(t, d)...)
	}
	if len(files) == 0 {
		testutil.SkipOrFail(t, "no feeds in the corpus")
	}
	signer, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.Links{Base: "https://feedmail.example.com", Domain: "feedmail.example.com", Tokens: signer}
	s := mailer.Sender{Address: "feedmail@feedmail.example.com"}
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var st struct {
		feeds, items, digests, enclosures, withMedia, fallback, pixels, empty, malformed, urlLines, videos, images int
	}
	fail := func(path, what string, args ...any) {
		t.Helper()
		if st.malformed+st.empty < 40 { // enough to see the pattern
			t.Errorf(path+": "+what, args...)
		}
	}
	for _, f := range files {
		feedURL := "https://corpus.example/" + f.Path
		feed, err := newitems.Parse(f.Body, "", feedURL)
		if err != nil || len(feed.Items) == 0 {
			continue
		}
		st.feeds++
		issue := &store.IssueContent{
			Issue:  store.DigestIssue{ID: int64(st.feeds)},
			Digest: store.Digest{ID: 1, UserID: 1, Name: "Morning"},
			Feeds:  []store.IssueFeed{{FeedID: int64(st.feeds), Title: feed.Title, URL: feedURL, SiteURL: feed.SiteURL}},
		}
		var allEnc []model.Enclosure
		for i, it := range feed.Items {
			st.items++
			media := corpusMedia(it.Media)
			if !media.Empty() {
				st.withMedia++
			}
			allEnc = append(allEnc, media.Enclosures...)
			c := mailer.PrepareHTML(it.ContentHTML, firstNonEmpty(it.Link, feedURL))
			st.pixels += c.Pixels
			if c.Empty() && !media.Empty() {
				st.fallback++
			}
			if re := renderAgain(c.HTML); re != c.HTML {
				st.malformed++
				fail(f.Path, "item %d: content does not round-trip:\n%s\n->\n%s", i, c.HTML, re)
			}
			e := mailer.ItemEmail{
				To: "reader@example.org", FeedTitle: feed.Title, FeedURL: feedURL, MessageID: s.ItemMessageID(1, int64(i+1)),
				Date: now, ItemTitle: it.Title, ItemLink: it.Link, ItemHTML: it.ContentHTML, Author: it.Author,
				Published: it.Published, Media: media,
				Footer: mailer.Footer{FeedTitle: feed.Title, FeedURL: feedURL, SiteURL: feed.SiteURL,
					UnsubscribeURL: l.Unsubscribe(1), ManageURL: l.Account(1, now)},
			}
			m, err := s.Item(e)
			if err != nil {
				t.Errorf("%s item %d: compose: %v", f.Path, i, err)
				continue
			}
			raw, err := mailer.Render(m)
			if err != nil {
				t.Fatal(err)
			}
			text, htmlPart := testutil.MailParts(t, raw)
			text = strings.ReplaceAll(text, "\r\n", "\n")
			if itemTextBody(text) == "" || !htmlBodyShows(htmlPart) {
				st.empty++
				fail(f.Path, "item %d: empty body:\n%s", i, text)
			}
			st.enclosures += checkEnclosures(t, f.Path, media.Enclosures, text, htmlPart)
			st.images += strings.Count(htmlPart, "<img ")
			if strings.Contains(text, "\nWatch on ") || strings.Contains(text, "\nWatch the video: ") {
				st.videos++
			}
			if bad := checkHTML(htmlPart); bad != "" {
				st.malformed++
				fail(f.Path, "item %d: %s", i, bad)
			}
			for line := range strings.Lines(text) {
				if len(urlRun.FindAllString(line, -1)) >= 4 {
					st.urlLines++
				}
			}
			issue.Feeds[0].Items = append(issue.Feeds[0].Items, store.Item{
				ID: int64(i + 1), Title: it.Title, Link: it.Link, Content: it.ContentHTML, Media: media, SeenAt: now})
		}
		m, err := s.Digest(mailer.DigestEmailOf(issue, "reader@example.org", s, l, now))
		if err != nil {
			t.Errorf("%s: digest: %v", f.Path, err)
			continue
		}
		st.digests++
		raw, err := mailer.Render(m)
		if err != nil {
			t.Fatal(err)
		}
		text, htmlPart := testutil.MailParts(t, raw)
		text = strings.ReplaceAll(text, "\r\n", "\n")
		if n := emptyDigestEntries(text); n > 0 {
			st.empty += n
			fail(f.Path, "digest: %d entries with nothing under their title:\n%s", n, text)
		}
		checkEnclosures(t, f.Path+" (digest)", allEnc, text, htmlPart)
		if bad := checkHTML(htmlPart); bad != "" {
			st.malformed++
			fail(f.Path, "digest: %s", bad)
		}
	}
	t.Logf("%d feeds, %d items rendered (%d digests), %d enclosures all linked, %d pixels removed, %d empty bodies, %d malformed",
		st.feeds, st.items, st.digests, st.enclosures, st.pixels, st.empty, st.malformed)
	t.Logf("%d items carry media, %d shown through their media for want of content; %d text lines with 4+ URLs",
		st.withMedia, st.fallback, st.urlLines)
	t.Logf("%d images in the item emails, none a tracking pixel or tracker image (FeedBurner, FeedFlare, ads, stats); %d items shown as videos",
		st.images, st.videos)
	if st.feeds < 1000 || st.enclosures == 0 || st.pixels == 0 {
		t.Errorf("corpus smaller than expected: %d feeds, %d enclosures, %d pixels", st.feeds, st.enclosures, st.pixels)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// renderAgain parses a content fragment as the templates place it (in a
// <div>) and renders it.
func renderAgain(fragment string) string {
	ctx := &nethtml.Node{Type: nethtml.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := nethtml.ParseFragment(strings.NewReader(fragment), ctx)
	if err != nil {
		return "parse error: " + err.Error()
	}
	var b strings.Builder
	for _, n := range nodes {
		_ = nethtml.Render(&b, n)
	}
	return b.String()
}

// checkHTML returns what is wrong with an HTML part: malformed by the
// strict check, changed by parsing, or still holding a tracking pixel.
func checkHTML(doc string) string {
	if bad := testutil.MalformedHTML(doc); len(bad) > 0 {
		return "malformed: " + strings.Join(bad, "; ")
	}
	if !testutil.HTMLDocStable(doc) {
		return "not stable under parsing and rendering"
	}
	z := nethtml.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == nethtml.ErrorToken {
			return ""
		}
		if tt != nethtml.StartTagToken && tt != nethtml.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if tok.Data != "img" {
			continue
		}
		var w, h, src string
		for _, a := range tok.Attr {
			switch a.Key {
			case "width":
				w = a.Val
			case "height":
				h = a.Val
			case "src":
				src = a.Val
			}
		}
		tiny := func(s string) bool {
			s = strings.TrimSuffix(strings.TrimSpace(s), "px")
			return s == "0" || s == "1" || s == "2"
		}
		if (tiny(w) && (h == "" || tiny(h))) || (tiny(h) && w == "") {
			return "tracking pixel left: " + tok.String()
		}
		for _, host := range []string{"feedburner.com/~r/", "feedburner.com/~f/", "feedburner.com/~ff/", "feedburner.com/~a/",
			"feedproxy.google.com/~", "doubleclick.net", "pixel.wp.com", "stats.wordpress.com", "googlesyndication.com", "google-analytics.com"} {
			if strings.Contains(src, host) {
				return "tracker image left: " + tok.String()
			}
		}
	}
}

// checkEnclosures fails t for each http(s) enclosure that is not linked in
// both parts, and returns how many were checked.
func checkEnclosures(t *testing.T, path string, es []model.Enclosure, text, htmlPart string) int {
	t.Helper()
	n := 0
	for _, e := range es {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Errorf("%s: enclosure %q is not an http(s) URL (newitems should have dropped it)", path, e.URL)
			continue
		}
		n++
		if !strings.Contains(htmlPart, `href="`+html.EscapeString(u.String())+`"`) {
			t.Errorf("%s: enclosure %s not linked in the HTML part", path, u)
		}
		if !strings.Contains(text, u.String()) {
			t.Errorf("%s: enclosure %s missing from the text part", path, u)
		}
	}
	return n
}

// itemTextBody is the text part of an item email between its head (feed
// title, item title, link, byline) and the footer, without the "Read on
// the site" (or a video's "Watch on …") line.
func itemTextBody(text string) string {
	body, _, _ := strings.Cut(text, "\n-- \n")
	lines := strings.Split(body, "\n")
	// Line 0 is the feed title, 1 blank, 2 the item title; the head ends
	// at the next blank line.
	i := 3
	for i < len(lines) && lines[i] != "" {
		i++
	}
	var rest []string
	for _, l := range lines[min(i, len(lines)):] {
		if !strings.HasPrefix(l, "Read on the site: ") && !strings.HasPrefix(l, "Watch on ") && !strings.HasPrefix(l, "Watch the video: ") {
			rest = append(rest, l)
		}
	}
	return strings.TrimSpace(strings.Join(rest, "\n"))
}

// htmlBodyShows reports whether the HTML part of an item email shows
// something between the title block and the footer: text or an image.
func htmlBodyShows(doc string) bool {
	_, after, ok := strings.Cut(doc, "</h1>")
	if !ok {
		return false
	}
	body, _, _ := strings.Cut(after, "You get this email because")
	// The byline paragraph is part of the head.
	if strings.HasPrefix(strings.TrimSpace(body), `<p style="margin:0 0 24px;`) {
		if _, rest, ok := strings.Cut(body, "</p>"); ok {
			body = rest
		}
	}
	body = strings.ReplaceAll(body, "Read on the site", "")
	if i := strings.LastIndex(body, ">Watch "); i >= 0 { // a video's call to action
		body = body[:i]
	}
	return strings.Contains(body, "<img") || mailer.HTMLToLine(body) != ""
}

// emptyDigestEntries counts the entries of a digest's text part with
// nothing under their title but its link and date.
func emptyDigestEntries(text string) int {
	body, _, _ := strings.Cut(text, "\n-- \n")
	empty := 0
	for _, entry := range strings.Split(body, "\n* ")[1:] {
		lines := strings.Split(entry, "\n")[1:] // after the title
		content := 0
		for j, l := range lines {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "== ") {
				if strings.HasPrefix(l, "== ") {
					break
				}
				continue
			}
			if j < 2 && (strings.HasPrefix(l, "http") || isDate(l)) {
				continue
			}
			content++
		}
		if content == 0 {
			empty++
		}
	}
	return empty
}

// isDate reports whether s is a date as the digest shows one.
func isDate(s string) bool {
	_, err := time.Parse("January 2, 2006", s)
	return err == nil
}
