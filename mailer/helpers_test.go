package mailer

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"
)

// parsed is a rendered message taken apart again.
type parsed struct {
	raw        string
	header     netmail.Header
	rawHeaders string
	partTypes  []string
	text, html string
}

var wordDecoder = mime.WordDecoder{}

// header returns a header value with RFC 2047 words decoded.
func (p parsed) get(name string) string {
	v, err := wordDecoder.DecodeHeader(p.header.Get(name))
	if err != nil {
		return p.header.Get(name)
	}
	return v
}

func renderParse(t testing.TB, m *mail.Msg) parsed {
	t.Helper()
	raw, err := Render(m)
	if err != nil {
		t.Fatal(err)
	}
	return parseRaw(t, raw)
}

func parseRaw(t testing.TB, raw []byte) parsed {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse message: %v\n%s", err, raw)
	}
	p := parsed{raw: string(raw), header: msg.Header}
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		p.rawHeaders = string(raw[:i+2])
	} else if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		p.rawHeaders = string(raw[:i+1])
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("Content-Type: %v", err)
	}
	if mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q, want multipart/alternative", mt)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		var r io.Reader = part
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			r = quotedprintable.NewReader(part)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("part %s: %v", ct, err)
		}
		p.partTypes = append(p.partTypes, ct)
		switch ct {
		case "text/plain":
			p.text = string(b)
		case "text/html":
			p.html = string(b)
		}
	}
	return p
}

var testDate = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testSender() Sender { return Sender{Address: "feedmail@mail.example.com"} }

func testItem() ItemEmail {
	s := testSender()
	return ItemEmail{
		To:        "reader@example.org",
		FeedTitle: "Example Blog",
		FeedURL:   "https://blog.example.com/feed.xml",
		ListID:    s.FeedListID(42),
		MessageID: s.MessageID("item.7.99"),
		Date:      testDate,
		ItemTitle: "Hello, world",
		ItemLink:  "https://blog.example.com/posts/hello",
		ItemHTML:  `<p>First <a href="/about">about</a>.</p><p><img src="img/a.png" alt="A picture"></p>`,
		Author:    "Ann Author",
		Published: time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC),
		Footer: Footer{
			SiteURL:        "https://blog.example.com/",
			ManageURL:      "https://feedmail.example.com/account/TOKEN-A",
			UnsubscribeURL: "https://feedmail.example.com/unsubscribe/TOKEN-U",
			StatusURL:      "https://feedmail.example.com/feeds/status?url=https%3A%2F%2Fblog.example.com%2Ffeed.xml",
		},
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
