package mailer

import (
	"errors"
	netmail "net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"
)

func TestItemHeaders(t *testing.T) {
	m, err := testSender().Item(testItem())
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	want := map[string]string{
		"From":                  `"Example Blog via feedmail" <feedmail@mail.example.com>`,
		"To":                    "<reader@example.org>",
		"Subject":               "Hello, world",
		"Message-ID":            "<item.7.99@mail.example.com>",
		"Date":                  "Wed, 04 Mar 2026 05:06:07 +0000",
		"List-Id":               `"Example Blog" <feed-42.mail.example.com>`,
		"List-Unsubscribe":      "<https://feedmail.example.com/unsubscribe/TOKEN-U>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"Auto-Submitted":        "auto-generated",
		"MIME-Version":          "1.0",
	}
	for k, v := range want {
		if got := p.get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got := p.header.Get("User-Agent") + p.header.Get("X-Mailer"); got != "" {
		t.Errorf("User-Agent/X-Mailer = %q, want none", got)
	}
	if d, err := p.header.Date(); err != nil || !d.Equal(testDate) {
		t.Errorf("Date parses as %v, %v", d, err)
	}
	if got := strings.Join(p.partTypes, ","); got != "text/plain,text/html" {
		t.Errorf("parts = %s, want text/plain then text/html", got)
	}
	for _, s := range []string{"https://blog.example.com/about", "https://blog.example.com/posts/img/a.png", "max-width:100%", "TOKEN-U", "TOKEN-A", "Example Blog"} {
		if !strings.Contains(p.html, s) {
			t.Errorf("HTML part lacks %q", s)
		}
	}
}

func TestItemTextPart(t *testing.T) {
	m, err := testSender().Item(testItem())
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	want := `Example Blog

Hello, world
https://blog.example.com/posts/hello
By Ann Author · March 3, 2026

First about <https://blog.example.com/about>.

[A picture]

Read on the site: https://blog.example.com/posts/hello

-- 
You get this email because reader@example.org follows Example Blog (https://blog.example.com/feed.xml) with feedmail.
Each of its new posts comes in an email of its own; on the account page
you can have them gathered into a digest instead.
Manage subscriptions: https://feedmail.example.com/account/TOKEN-A
Unsubscribe: https://feedmail.example.com/unsubscribe/TOKEN-U
Feed status: https://feedmail.example.com/feeds/status?url=https%3A%2F%2Fblog.example.com%2Ffeed.xml
`
	got := strings.ReplaceAll(p.text, "\r\n", "\n")
	if got != want {
		t.Errorf("text part:\n%s\nwant:\n%s", got, want)
	}
}

func TestItemFallbacks(t *testing.T) {
	e := testItem()
	e.ItemTitle = ""
	e.ListID = ""
	e.MessageID = ""
	e.ItemLink = ""
	e.Footer = Footer{}
	m, err := testSender().Item(e)
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	if got := p.get("Subject"); got != "New post from Example Blog" {
		t.Errorf("Subject = %q", got)
	}
	if got := p.get("List-Id"); !regexp.MustCompile(`^"Example Blog" <feed-[0-9a-f]{12}\.mail\.example\.com>$`).MatchString(got) {
		t.Errorf("derived List-Id = %q", got)
	}
	if got := p.get("Message-ID"); !regexp.MustCompile(`^<[0-9a-f]{32}@mail\.example\.com>$`).MatchString(got) {
		t.Errorf("random Message-ID = %q", got)
	}
	if p.header.Get("List-Unsubscribe") != "" || p.header.Get("List-Unsubscribe-Post") != "" {
		t.Error("List-Unsubscribe without an unsubscribe URL")
	}
	// Relative links in the content resolve against the feed URL.
	if !strings.Contains(p.html, "https://blog.example.com/about") {
		t.Error("relative link not resolved against the feed URL")
	}
}

func TestUnicodeHeaders(t *testing.T) {
	e := testItem()
	e.FeedTitle = "Blögg — 日本語のフィード"
	e.ItemTitle = "Ça va? ½ ☃ " + strings.Repeat("long ", 60)
	m, err := testSender().Item(e)
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	from, err := netmail.ParseAddress(p.header.Get("From"))
	if err != nil {
		t.Fatalf("From %q: %v", p.header.Get("From"), err)
	}
	if from.Name != "Blögg — 日本語のフィード via feedmail" || from.Address != "feedmail@mail.example.com" {
		t.Errorf("From = %+v", from)
	}
	subj := p.get("Subject")
	if !strings.HasPrefix(subj, "Ça va? ½ ☃ long") || !strings.HasSuffix(subj, "…") || len([]rune(subj)) != maxSubject {
		t.Errorf("Subject = %q (%d runes)", subj, len([]rune(subj)))
	}
	if got := p.get("List-Id"); got != "Blögg — 日本語のフィード <feed-42.mail.example.com>" {
		t.Errorf("List-Id = %q", got)
	}
	for _, line := range strings.Split(p.rawHeaders, "\r\n") {
		if len(line) > 998 {
			t.Errorf("header line of %d octets", len(line))
		}
		for _, c := range []byte(line) {
			if c >= 0x80 {
				t.Fatalf("raw 8-bit byte in header line %q", line)
			}
		}
	}
}

func TestHeaderInjection(t *testing.T) {
	evil := "Nice title\r\nBcc: victim@example.net\r\nX-Injected: yes"
	tests := []struct {
		name    string
		compose func(s Sender) (*mail.Msg, error)
		wantErr bool
	}{
		{"feed title", func(s Sender) (*mail.Msg, error) { e := testItem(); e.FeedTitle = evil; return s.Item(e) }, false},
		{"item title", func(s Sender) (*mail.Msg, error) { e := testItem(); e.ItemTitle = evil; return s.Item(e) }, false},
		{"author", func(s Sender) (*mail.Msg, error) { e := testItem(); e.Author = evil; return s.Item(e) }, false},
		{"lone CR and LF, NUL, bidi", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.ItemTitle = "a\rBcc: x@example.net\nX-Injected: 1\x00\u202ereversed\u2028next"
			return s.Item(e)
		}, false},
		{"digest name", func(s Sender) (*mail.Msg, error) { e := testDigest(); e.DigestName = evil; return s.Digest(e) }, false},
		{"digest feed title", func(s Sender) (*mail.Msg, error) { e := testDigest(); e.Feeds[0].Title = evil; return s.Digest(e) }, false},
		{"notice subject", func(s Sender) (*mail.Msg, error) {
			return s.Notice(NoticeEmail{To: "a@example.org", Subject: evil, Text: "t", Date: testDate})
		}, false},
		{"to", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.To = "a@example.org\r\nBcc: victim@example.net"
			return s.Item(e)
		}, true},
		{"message id", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.MessageID = "<a@b>\r\nBcc: victim@example.net"
			return s.Item(e)
		}, true},
		{"list id", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.ListID = "feed-1.example.com>\r\nBcc: v@example.net"
			return s.Item(e)
		}, true},
		{"unsubscribe url", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.Footer.UnsubscribeURL = "https://feedmail.example.com/u/x>\r\nBcc: victim@example.net"
			return s.Item(e)
		}, true},
		{"unsubscribe url bracket", func(s Sender) (*mail.Msg, error) {
			e := testItem()
			e.Footer.UnsubscribeURL = "https://feedmail.example.com/u?x=>,<mailto:victim@example.net"
			return s.Item(e)
		}, true},
		{"sender address", func(Sender) (*mail.Msg, error) {
			return Sender{Address: "feedmail@example.com\r\nBcc: victim@example.net"}.Item(testItem())
		}, true},
	}
	headerLine := regexp.MustCompile(`^(?:[A-Za-z0-9-]+: |[ \t])`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.compose(testSender())
			if tc.wantErr {
				if err == nil {
					t.Fatal("composed a message from a value that would break a header")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := renderParse(t, res)
			for _, name := range []string{"Bcc", "X-Injected"} {
				if v, ok := p.header[name]; ok {
					t.Errorf("injected header %s: %q", name, v)
				}
			}
			if strings.Contains(p.rawHeaders, "\r\nBcc:") || strings.Contains(p.rawHeaders, "\r\nX-Injected:") {
				t.Error("injected header line in raw headers")
			}
			for _, line := range strings.Split(strings.TrimSuffix(p.rawHeaders, "\r\n"), "\r\n") {
				if !headerLine.MatchString(line) {
					t.Errorf("malformed header line %q", line)
				}
				if strings.ContainsAny(line, "\r\n\x00") {
					t.Errorf("control character in header line %q", line)
				}
			}
		})
	}
}

func TestMessageIDAndListIDHelpers(t *testing.T) {
	s := testSender()
	tests := []struct{ got, want string }{
		{s.MessageID("item.1.2"), "<item.1.2@mail.example.com>"},
		{s.MessageID("a b<c>@d"), "<a-b-c-d@mail.example.com>"},
		{s.MessageID(""), "<feedmail@mail.example.com>"},
		{s.FeedListID(7), "feed-7.mail.example.com"},
		{s.DigestListID(3), "digest-3.mail.example.com"},
		{Sender{Address: "feedmail@localhost"}.FeedListID(1), "feed-1.localhost.localdomain"},
		{Sender{Address: "Feed Mail <fm@Example.COM>"}.MessageID("x"), "<x@example.com>"},
		{Sender{Address: "fm@example.com", Domain: "other.example"}.MessageID("x"), "<x@other.example>"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestMessageIDInstallTag checks the install part of Message-IDs: the same
// email keeps its id (a retry), the same row numbers under another install
// key get another id, and the id stays a valid Message-ID.
func TestMessageIDInstallTag(t *testing.T) {
	a := Sender{Address: "feedmail@example.com", IDKey: []byte("install-a-key-0123456789abcdef")}
	b := Sender{Address: "feedmail@example.com", IDKey: []byte("install-b-key-0123456789abcdef")}
	form := regexp.MustCompile(`^<item-1-10\.[a-z2-7]{16}@example\.com>$`)
	if id := a.ItemMessageID(1, 10); !form.MatchString(id) {
		t.Errorf("ItemMessageID = %q, want %s", id, form)
	}
	if first, again := a.ItemMessageID(1, 10), a.ItemMessageID(1, 10); first != again {
		t.Error("the same email must keep its Message-ID")
	}
	if first, again := a.MessageID("digest.5"), a.MessageID("digest.5"); first != again {
		t.Error("the same email must keep its Message-ID")
	}
	seen := map[string]string{}
	for _, s := range []Sender{a, b} {
		for _, local := range []string{"item-1-10", "item-1-1", "item-11-0", "digest.5", "notice-5"} {
			id := s.MessageID(local)
			if prev, dup := seen[id]; dup {
				t.Errorf("%q given twice (%s and %s)", id, prev, local)
			}
			seen[id] = local
			if _, err := normalizeMessageID(id); err != nil {
				t.Errorf("%q: %v", id, err)
			}
		}
	}
	if id := (Sender{Address: "feedmail@example.com"}).ItemMessageID(1, 10); id != "<item-1-10@example.com>" {
		t.Errorf("without IDKey: %q", id)
	}
}

func TestComposeErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func() error
	}{
		{"no date", func() error { e := testItem(); e.Date = time.Time{}; _, err := testSender().Item(e); return err }},
		{"no recipient", func() error { e := testItem(); e.To = " "; _, err := testSender().Item(e); return err }},
		{"bad recipient", func() error { e := testItem(); e.To = "not an address"; _, err := testSender().Item(e); return err }},
		{"bad sender", func() error { _, err := Sender{Address: "nope"}.Item(testItem()); return err }},
		{"notice without subject", func() error {
			_, err := testSender().Notice(NoticeEmail{To: "a@example.org", Text: "x", Date: testDate})
			return err
		}},
		{"notice javascript link", func() error {
			_, err := testSender().Notice(NoticeEmail{To: "a@example.org", Subject: "s", Date: testDate,
				Links: []Link{{Label: "x", URL: "javascript:alert(1)"}}})
			return err
		}},
	}
	for _, tc := range tests {
		if err := tc.f(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func testDigest() DigestEmail {
	return DigestEmail{
		To:         "reader@example.org",
		DigestName: "Morning",
		MessageID:  "<digest.3.20260304@mail.example.com>",
		Date:       testDate,
		Feeds: []DigestFeed{
			{Title: "Blog A", SiteURL: "https://a.example.com/", Items: []DigestItem{
				{Title: "A2", Link: "https://a.example.com/2", ExcerptHTML: "<p>Second <b>post</b> <script>x()</script></p>", Published: testDate},
				{Title: "A1", Link: "https://a.example.com/1", ExcerptHTML: `<p>First <a href="/x">x</a></p>`},
			}},
			{Title: "Blog B", SiteURL: "https://b.example.com/", Items: []DigestItem{
				{Title: "B1", Link: "https://b.example.com/1"},
			}},
			{Title: "Empty", Items: nil},
		},
		Footer: Footer{
			ManageURL:      "https://feedmail.example.com/account/T",
			UnsubscribeURL: "https://feedmail.example.com/unsubscribe/D",
		},
	}
}

func TestDigest(t *testing.T) {
	m, err := testSender().Digest(testDigest())
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	want := map[string]string{
		"Subject":               "Your Morning digest: 3 new posts from 2 feeds",
		"From":                  `"Morning digest via feedmail" <feedmail@mail.example.com>`,
		"Message-ID":            "<digest.3.20260304@mail.example.com>",
		"List-Unsubscribe":      "<https://feedmail.example.com/unsubscribe/D>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"List-Id":               "",
	}
	for k, v := range want {
		if got := p.get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if strings.Contains(p.html, "x()") || strings.Contains(strings.ToLower(p.html), "<script") {
		t.Error("script in digest HTML")
	}
	for _, s := range []string{"Blog A", "Blog B", "https://a.example.com/x", "Unsubscribe from this digest", "Morning digest"} {
		if !strings.Contains(p.html, s) {
			t.Errorf("HTML lacks %q", s)
		}
	}
	if strings.Contains(p.html, "Empty") {
		t.Error("feed without items rendered")
	}
	// Order: feeds and items as given.
	if a2, a1, b1 := strings.Index(p.text, "* A2"), strings.Index(p.text, "* A1"), strings.Index(p.text, "* B1"); !(a2 >= 0 && a2 < a1 && a1 < b1) {
		t.Errorf("text order wrong:\n%s", p.text)
	}
	if !strings.Contains(p.text, "== Blog A ==") || !strings.Contains(p.text, "  Second post") {
		t.Errorf("text part:\n%s", p.text)
	}
	// A table of contents lists each feed with its count and links to its section.
	if toc := strings.Index(p.text, "In this issue:"); toc < 0 || !(toc < strings.Index(p.text, "- Blog A (2 new posts)") &&
		strings.Index(p.text, "- Blog A (2 new posts)") < strings.Index(p.text, "- Blog B (1 new post)") &&
		strings.Index(p.text, "- Blog B (1 new post)") < strings.Index(p.text, "== Blog A ==")) {
		t.Errorf("text part lacks the table of contents:\n%s", p.text)
	}
	if !strings.Contains(p.html, `href="#feed-1"`) || !strings.Contains(p.html, `id="feed-1"`) || !strings.Contains(p.html, `href="#feed-2"`) {
		t.Errorf("HTML lacks table-of-contents anchors")
	}
}

func TestDigestSubjects(t *testing.T) {
	items := func(n int) []DigestItem { return make([]DigestItem, n) }
	tests := []struct {
		name  string
		feeds []DigestFeed
		want  string
	}{
		{"Morning", []DigestFeed{{Items: items(1)}}, "Your Morning digest: 1 new post from 1 feed"},
		{"Morning", []DigestFeed{{Items: items(2)}}, "Your Morning digest: 2 new posts from 1 feed"},
		{"Weekly digest", []DigestFeed{{Items: items(1)}, {Items: items(1)}}, "Your Weekly digest: 2 new posts from 2 feeds"},
		{"", []DigestFeed{{Items: items(10)}, {Items: items(4)}, {}, {Items: items(0)}}, "Your digest: 14 new posts from 2 feeds"},
	}
	for _, tc := range tests {
		e := testDigest()
		e.DigestName, e.Feeds = tc.name, tc.feeds
		m, err := testSender().Digest(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := renderParse(t, m).get("Subject"); got != tc.want {
			t.Errorf("Subject = %q, want %q", got, tc.want)
		}
	}
	e := testDigest()
	e.Feeds = []DigestFeed{{Title: "x"}}
	if _, err := testSender().Digest(e); !errors.Is(err, ErrEmptyDigest) {
		t.Errorf("empty digest: %v, want ErrEmptyDigest", err)
	}
	e = testDigest()
	e.ListID = testSender().DigestListID(3)
	m, err := testSender().Digest(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := renderParse(t, m).get("List-Id"); got != `"Morning digest" <digest-3.mail.example.com>` {
		t.Errorf("digest List-Id = %q", got)
	}
}

func TestNotice(t *testing.T) {
	m, err := testSender().Notice(NoticeEmail{
		To:      "reader@example.org",
		Subject: "Confirm your subscription to Example Blog",
		Text:    "Someone asked to send Example Blog to reader@example.org.\nIf it was you, confirm below.\n\nIf not, ignore this <message>.",
		Links:   []Link{{Label: "Confirm subscription", URL: "https://feedmail.example.com/confirm/TOKEN"}},
		Date:    testDate,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	if got := p.get("From"); got != `"feedmail" <feedmail@mail.example.com>` {
		t.Errorf("From = %q", got)
	}
	for _, h := range []string{"List-Id", "List-Unsubscribe", "List-Unsubscribe-Post"} {
		if p.header.Get(h) != "" {
			t.Errorf("notice has %s", h)
		}
	}
	if !strings.Contains(p.html, `href="https://feedmail.example.com/confirm/TOKEN"`) || !strings.Contains(p.html, "Confirm subscription</a>") {
		t.Errorf("no button in HTML:\n%s", p.html)
	}
	if !strings.Contains(p.html, "ignore this &lt;message&gt;.") || !strings.Contains(p.html, "reader@example.org.<br>If it was you") {
		t.Errorf("paragraphs not rendered:\n%s", p.html)
	}
	wantText := "Someone asked to send Example Blog to reader@example.org.\nIf it was you, confirm below.\n\nIf not, ignore this <message>.\n\nConfirm subscription:\nhttps://feedmail.example.com/confirm/TOKEN\n\n-- \nThis message was sent by feedmail to reader@example.org.\n"
	if got := strings.ReplaceAll(p.text, "\r\n", "\n"); got != wantText {
		t.Errorf("text:\n%q\nwant:\n%q", got, wantText)
	}
}

func TestHTMLPartLayout(t *testing.T) {
	m, err := testSender().Item(testItem())
	if err != nil {
		t.Fatal(err)
	}
	p := renderParse(t, m)
	for _, s := range []string{`<meta name="viewport"`, "max-width:640px", "margin:0 auto", "<!--[if mso]>", "Manage subscriptions", "Unsubscribe</a>", "Feed status"} {
		if !strings.Contains(p.html, s) {
			t.Errorf("HTML lacks %q", s)
		}
	}
	for _, s := range []string{"<style", "<table"} {
		// the only table is Outlook's ghost table inside conditional comments
		rest := regexp.MustCompile(`(?s)<!--\[if mso\]>.*?<!\[endif\]-->`).ReplaceAllString(p.html, "")
		if strings.Contains(rest, s) {
			t.Errorf("HTML contains %q outside Outlook conditionals", s)
		}
	}
}
