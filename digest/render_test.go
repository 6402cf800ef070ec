package digest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// parsed is a rendered message: its headers and its two parts.
type parsed struct {
	header     netmail.Header
	text, html string
	types      []string
}

func parseMsg(t *testing.T, raw []byte) parsed {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v)", m.Header.Get("Content-Type"), err)
	}
	out := parsed{header: m.Header}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			body = quotedprintable.NewReader(p)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out.types = append(out.types, ct)
		switch ct {
		case "text/plain":
			out.text = string(b)
		case "text/html":
			out.html = string(b)
		}
	}
	return out
}

func TestRenderDigest(t *testing.T) {
	e := newEnv(t, utc("2026-05-04T06:00:00Z"))
	p := e.newPerson("reader@example.com", "Morning", "daily", "Europe/Berlin", 7)
	day := utc("2026-05-01T12:00:00Z")
	// 14 posts from 6 feeds (feed 6 has none): feed 0 has four, published
	// on different days; the others two each, feed 5 one... see counts.
	counts := []int{4, 2, 2, 2, 2, 2}
	for f, n := range counts {
		for k := range n {
			pub := day.Add(time.Duration(f)*time.Hour + time.Duration(k)*24*time.Hour)
			p.queue(e, f, fmt.Sprintf("Feed %d post %d", f, k), "<p>Body of the post</p>", pub)
		}
	}
	long := strings.Repeat("word ", 200)
	p.queue(e, 1, "Tricky <b>title</b>", `<script>alert(1)</script><p onclick="x()">Hello <a href="javascript:evil()">there</a></p><p>`+long+`</p>`, day.Add(10*24*time.Hour))
	e.clk.Set(utc("2026-05-05T05:00:00Z"))
	if n := e.assemble(); n != 1 {
		t.Fatalf("issued %d", n)
	}
	row := e.outbox(p.user.ID)[0]

	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://feedmail.example", sign, "feedmail@feedmail.example")
	render := outbox.NewDigestRenderer(outbox.DigestRenderConfig{Store: e.st, Sender: mailer.Sender{Address: "feedmail@feedmail.example"}, Links: l, Clock: e.clk})
	m, err := render(e.ctx, &row)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := mailer.Render(m)
	if err != nil {
		t.Fatal(err)
	}
	msg := parseMsg(t, raw)
	h := msg.header

	if got := h.Get("Subject"); got != "Your Morning digest, Tue 5 May: 15 new posts from 6 feeds" {
		t.Errorf("Subject %q", got)
	}
	if got := h.Get("To"); !strings.Contains(got, "reader@example.com") {
		t.Errorf("To %q", got)
	}
	wantID := fmt.Sprintf("<digest.%d@feedmail.example>", *row.IssueID)
	if got := h.Get("Message-Id"); got != wantID {
		t.Errorf("Message-ID %q, want %q", got, wantID)
	}
	if got := h.Get("List-Id"); !strings.Contains(got, fmt.Sprintf("<digest-%d.feedmail.example>", p.digest.ID)) {
		t.Errorf("List-Id %q", got)
	}
	lu := h.Get("List-Unsubscribe")
	if lu != "<"+l.DigestUnsubscribe(p.digest.ID)+">" {
		t.Errorf("List-Unsubscribe %q", lu)
	}
	tok := strings.TrimPrefix(l.DigestUnsubscribe(p.digest.ID), "https://feedmail.example/unsubscribe/")
	if id, err := sign.Verify(tok, token.DigestUnsubscribe, e.clk.Now()); err != nil || id != p.digest.ID {
		t.Errorf("unsubscribe token: %d, %v", id, err)
	}
	if got := h.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post %q", got)
	}
	if fmt.Sprint(msg.types) != "[text/plain text/html]" {
		t.Errorf("parts %v, want text then HTML", msg.types)
	}

	// Grouped by feed, feeds by their newest post, posts newest first:
	// feed 1 has the newest post (the tricky one), then feed 0 (four days
	// of posts, the newest on day 4), then feeds 2…5 by their day-2 post.
	text := msg.text
	order := []string{"Tricky title", "Feed 1 post 1", "Feed 1 post 0", "Feed 0 post 3", "Feed 0 post 0", "Feed 5 post 1", "Feed 2 post 0"}
	last := -1
	for _, s := range order {
		i := strings.Index(text, s)
		if i < 0 || i < last {
			t.Fatalf("text part out of order at %q:\n%s", s, text)
		}
		last = i
	}
	if strings.Contains(msg.html, "<script") || strings.Contains(msg.html, "javascript:") || strings.Contains(msg.html, "onclick") ||
		strings.Contains(msg.html, "alert(1)") {
		t.Error("excerpt not sanitized")
	}
	if !strings.Contains(text, "Hello there") || strings.Contains(text, strings.Repeat("word ", 100)) || !strings.Contains(text, "…") {
		t.Error("excerpt not cut short")
	}
	// Relative links are made absolute against the feed URL.
	if !regexp.MustCompile(`https://site\d+\.example/posts/\d+`).MatchString(text) {
		t.Errorf("item links not absolute:\n%s", text)
	}
	if !strings.Contains(text, "May 11, 2026") {
		t.Error("item dates missing")
	}

	// Rendering again (a retry) keeps the Message-ID.
	m2, err := render(e.ctx, &row)
	if err != nil {
		t.Fatal(err)
	}
	if m2.GetMessageID() != m.GetMessageID() {
		t.Errorf("Message-ID changed between attempts: %s, %s", m.GetMessageID(), m2.GetMessageID())
	}

	// The person unsubscribes from every feed before it is sent: the
	// email is cancelled, not sent empty.
	for _, s := range p.subs {
		if _, err := e.st.EndSubscription(e.ctx, s.ID, "unsubscribed"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := render(e.ctx, &row); !errors.Is(err, outbox.ErrCancelled) {
		t.Errorf("render after unsubscribing: %v, want ErrCancelled", err)
	}
	if _, err := render(e.ctx, &store.OutboxRow{IssueID: ptr(int64(999999))}); !errors.Is(err, outbox.ErrCancelled) {
		t.Errorf("render of a missing issue: %v, want ErrCancelled", err)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"<p>Hello <b>world</b></p>", 280, "Hello world"},
		{"<p>One</p><p>Two</p>", 280, "One Two"},
		{"<script>x()</script><style>p{}</style>Text &amp; more", 280, "Text & more"},
		{"alpha beta gamma delta", 12, "alpha beta…"},
		{"abcdefghijklmnop", 6, "abcde…"},
		{"", 10, ""},
		// Inline tags leave punctuation where it was; blocks, breaks and
		// cells keep words apart.
		{`Buy <a href="/t">tickets</a>. It's <em>on</em>!`, 280, "Buy tickets. It's on!"},
		{`<strong>Scott Hanselman</strong>: Plex <code>v1</code>, <span>x</span>; <i>y</i>?`, 280, "Scott Hanselman: Plex v1, x; y?"},
		{`a<b>b</b>c`, 280, "abc"},
		{`one<br>two<br/>three`, 280, "one two three"},
		{`<ul><li>a</li><li>b</li></ul><h2>H</h2>text<div>d</div>`, 280, "a b H text d"},
		{`<table><tr><td>1</td><td>2</td></tr></table>`, 280, "1 2"},
		{`x<img src="/a.png">y`, 280, "x y"},
		{`<p>café &lt;tag&gt; &nbsp;ok</p>`, 280, "café <tag> ok"},
		{`<noscript>no</noscript><iframe src=x>frame</iframe>kept`, 280, "kept"},
		{"a < b and c > d", 280, "a < b and c > d"},
	}
	for _, tt := range tests {
		got := mailer.Excerpt(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if utf8.RuneCountInString(got) > max(tt.max, 0) {
			t.Errorf("Excerpt(%q, %d) longer than max", tt.in, tt.max)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestEdition(t *testing.T) {
	slot := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		schedule, zone, slot, want string
	}{
		{"daily", "Europe/Berlin", "2026-11-24T06:00:00Z", "Tue 24 Nov"},
		{"weekly", "UTC", "2026-11-23T07:00:00Z", "Mon 23 Nov"},
		{"twice-daily", "UTC", "2026-11-24T07:00:00Z", "Tue 24 Nov 07:00"},
		{"twice-daily", "UTC", "2026-11-24T19:00:00Z", "Tue 24 Nov 19:00"},
		{"@every 10s", "UTC", "2026-11-24T10:00:10Z", "Tue 24 Nov 10:00"},
		{"daily", "America/New_York", "2026-03-08T11:00:00Z", "Sun 8 Mar"}, // the day clocks go forward
		{"not a schedule", "UTC", "2026-11-24T07:00:00Z", "Tue 24 Nov"},
	}
	for _, c := range cases {
		if got := digest.Edition(c.schedule, c.zone, slot(c.slot)); got != c.want {
			t.Errorf("Edition(%q, %q, %s) = %q, want %q", c.schedule, c.zone, c.slot, got, c.want)
		}
	}
}
