package mailer

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// fuzzHeaderLine is a well-formed header line: a field name and ": ", or a
// folded continuation.
var fuzzHeaderLine = regexp.MustCompile(`^(?:[A-Za-z0-9-]+:(?: |$)|[ \t])`)

// FuzzItemCompose composes an instant email from fuzzed feed-controlled
// text — feed title, item title, author and item HTML — with everything
// feedmail controls (addresses, ids, URLs) fixed, renders it and checks:
// composition never fails (feed text is sanitised, not refused); every
// header line is well formed with no CR, LF or NUL inside; the headers a
// title could try to add (Bcc, Cc, Reply-To, X-Injected, a second To) are
// absent and the recipient is exactly the one given; and the HTML part has
// nothing active (the package's unsafeHTML detector, as in
// TestSanitizeCorpus). Seeds: the item bodies of the feedparser sanitize
// corpus (read in place) plus header-injection attempts. Crashers kept in
// testdata/fuzz/FuzzItemCompose: "http:0" kept as an image URL (fixed in
// e4a0280) and a feed titled `"` making the From header unparsable, so
// every email of that feed failed (fixed in 60da426).
func FuzzItemCompose(f *testing.F) {
	for _, s := range [][4]string{
		{"Blog", "Hello", "Ann", "<p>hi</p>"},
		{"Evil\r\nBcc: v@example.net", "T\nX-Injected: 1", "A\r\n\r\n<b>body</b>", `<a href="javascript:alert(1)">x</a>`},
		{"Quote \"me\"", "\x00\u2028\u202e", "\"Quote\" <a@b>", `<img src=x onerror=alert(1)>`},
		{strings.Repeat("Ж", 300), "<script>alert(1)</script>", "", `<svg><script>alert(1)</script></svg>`},
		{"", "", "", `<style>@import url(javascript:alert(1))</style><div style="x:expression(alert(1))">`},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	dir := filepath.Join(testutil.CorpusDir(f), "feedparser", "tests", "wellformed", "sanitize")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	fp := gofeed.NewParser()
	for i, name := range names {
		if i%8 != 0 { // about 90 of the 745 files
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		feed, err := fp.ParseString(string(b))
		if err != nil {
			continue
		}
		for _, it := range feed.Items {
			body := it.Content
			if body == "" {
				body = it.Description
			}
			f.Add(feed.Title, it.Title, "", body)
		}
	}
	s := testSender()
	f.Fuzz(func(t *testing.T, feedTitle, itemTitle, author, itemHTML string) {
		e := testItem()
		e.FeedTitle, e.ItemTitle, e.Author, e.ItemHTML = feedTitle, itemTitle, author, itemHTML
		m, err := s.Item(e)
		if err != nil {
			t.Fatalf("composing from feed text failed: %v", err)
		}
		p := renderParse(t, m)
		for _, line := range strings.Split(strings.TrimSuffix(p.rawHeaders, "\r\n"), "\r\n") {
			if !fuzzHeaderLine.MatchString(line) || strings.ContainsAny(line, "\r\n\x00") {
				t.Fatalf("malformed header line %q", line)
			}
		}
		for _, name := range []string{"Bcc", "Cc", "Reply-To", "X-Injected", "Sender", "Return-Path"} {
			if v, ok := p.header[name]; ok {
				t.Fatalf("injected header %s: %q", name, v)
			}
		}
		for _, name := range []string{"From", "To", "Subject", "Message-Id", "Date", "List-Id", "List-Unsubscribe"} {
			if n := len(p.header[name]); n != 1 {
				t.Fatalf("%d %s headers", n, name)
			}
		}
		if to := p.header.Get("To"); to != "<reader@example.org>" {
			t.Fatalf("To: %q", to)
		}
		// What a mail client shows, RFC 2047 words decoded.
		for _, name := range []string{"Subject", "From"} {
			if v := p.get(name); strings.ContainsAny(v, "\r\n\x00\u2028\u2029\u202e") {
				t.Fatalf("%s decodes to control characters: %q", name, v)
			}
		}
		if bad := unsafeHTML(p.html); len(bad) > 0 {
			t.Fatalf("active content in the HTML part: %v", bad)
		}
	})
}

// TestSanitizeDropsHostlessHTTPURLs: an http or https URL without an
// authority ("http:0", "https:evil.example/x") is absolute to url.Parse
// (scheme plus opaque part), so relative-URL resolution would leave it alone
// and a scheme check would let it through, while a mail client resolves it
// against nothing. Such URLs cannot work in a mailbox and are dropped like
// relative ones. Found by FuzzItemCompose (testdata/fuzz/FuzzItemCompose/
// b49e19f2d1a5417d: <img srC= http:0>).
func TestSanitizeDropsHostlessHTTPURLs(t *testing.T) {
	s := testSender()
	for _, html := range []string{
		`<img srC= http:0>`,
		`<p><img src="https:evil.example/pixel.gif" alt="x"></p>`,
		`<a href="http:localhost:8080/admin">local</a>`,
	} {
		e := testItem()
		e.ItemHTML = html
		m, err := s.Item(e)
		if err != nil {
			t.Fatal(err)
		}
		p := renderParse(t, m)
		for _, b := range unsafeHTML(p.html) {
			t.Errorf("%s: %s", html, b)
		}
	}
}

// TestHeaderTextKeepsEncodedWordsLiteral: feed text that spells out an RFC
// 2047 encoded word ("=?utf-8?q?…?=") must reach the reader as that
// literal text: were it written into Subject or the From display name as
// is, mail clients would decode it, and a feed could slip in what the
// header sanitiser removes (CR/LF, NUL, line separators, bidi overrides: a
// display spoof in the From name). Found by FuzzItemCompose.
func TestHeaderTextKeepsEncodedWordsLiteral(t *testing.T) {
	s := testSender()
	words := []string{
		"=?utf-8?q?=0D=0ABcc:_victim@example.net?=",
		"=?utf-8?q?=E2=80=AEgnp.exe?=",
		"=?UTF-8?B?AEJjYzogdmljdGltQGV4YW1wbGUubmV0?=",
	}
	for _, w := range words {
		for _, field := range []string{"feed title", "item title", "author"} {
			t.Run(field+" "+w, func(t *testing.T) {
				e := testItem()
				switch field {
				case "feed title":
					e.FeedTitle = "News " + w
				case "item title":
					e.ItemTitle = "Post " + w
				case "author":
					e.Author = "Ann " + w
				}
				m, err := s.Item(e)
				if err != nil {
					t.Fatal(err)
				}
				p := renderParse(t, m)
				for _, name := range []string{"Subject", "From"} {
					if v := p.get(name); strings.ContainsAny(v, "\r\n\x00\u202e") {
						t.Errorf("%s as a mail client shows it: %q", name, v)
					}
				}
			})
		}
	}
}
