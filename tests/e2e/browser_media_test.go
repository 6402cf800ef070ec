package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// mediaFeeds serves a YouTube-like channel (Atom with media:group: no
// content, a thumbnail and a description), a podcast (RSS with an MP3
// enclosure and itunes:duration) and a photo blog (RSS whose post is a
// photo and a media:description), each with one old entry, and the second
// entry once published is set; plus the thumbnail, a real PNG.
type mediaFeeds struct {
	srv       *httptest.Server
	published atomic.Bool
}

func newMediaFeeds(t *testing.T) *mediaFeeds {
	t.Helper()
	m := &mediaFeeds{}
	img := image.NewRGBA(image.Rect(0, 0, 480, 270))
	for x := range 480 {
		for y := range 270 {
			img.Set(x, y, color.RGBA{R: uint8(x / 2), G: 90, B: uint8(y), A: 255})
		}
	}
	var thumb bytes.Buffer
	if err := png.Encode(&thumb, img); err != nil {
		t.Fatal(err)
	}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/thumb.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(thumb.Bytes())
		case "/channel.xml":
			w.Header().Set("Content-Type", "application/atom+xml")
			fmt.Fprint(w, m.channel())
		case "/podcast.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, m.podcast())
		case "/photos.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, m.photos())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mediaFeeds) channel() string {
	entry := func(id, title, date, desc string) string {
		return `<entry><id>yt:video:` + id + `</id><title>` + title + `</title>
<link rel="alternate" href="https://www.youtube.com/watch?v=` + id + `"/>
<published>` + date + `</published><updated>` + date + `</updated>
<author><name>Garden Channel</name></author>
<media:group><media:title>` + title + `</media:title>
<media:content url="https://www.youtube.com/v/` + id + `?version=3" type="application/x-shockwave-flash" width="640" height="390"/>
<media:thumbnail url="` + m.srv.URL + `/thumb.png" width="480" height="270"/>
<media:description>` + desc + `</media:description></media:group></entry>`
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/" xmlns:yt="http://www.youtube.com/xml/schemas/2015">
<title>Garden Channel</title><link rel="alternate" href="https://www.youtube.com/channel/UCgarden"/><id>yt:channel:UCgarden</id>`)
	if m.published.Load() {
		b.WriteString(entry("n3wVid30", "Winter pruning, step by step", time.Now().UTC().Format(time.RFC3339),
			"Twenty minutes on pruning apple trees in winter.\n\nTools: https://example.org/tools"))
	}
	b.WriteString(entry("0ldVid10", "Autumn leaves", time.Now().UTC().Add(-72*time.Hour).Format(time.RFC3339), "Old video."))
	b.WriteString(`</feed>`)
	return b.String()
}

func (m *mediaFeeds) podcast() string {
	item := func(n int, title string, date time.Time) string {
		return fmt.Sprintf(`<item><guid>episode-%d</guid><title>%s</title><link>https://podcast.example.org/%d</link>
<pubDate>%s</pubDate><description>Show notes for episode %d.</description>
<enclosure url="https://cdn.example.org/episodes/ep%d.mp3" type="audio/mpeg" length="58960432"/>
<itunes:duration>1:02:03</itunes:duration></item>`, n, title, n, date.Format(time.RFC1123Z), n, n)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
<title>The Allotment Hour</title><link>https://podcast.example.org/</link><description>A podcast.</description>`)
	if m.published.Load() {
		b.WriteString(item(2, "Episode 2: Soil in winter", time.Now().UTC()))
	}
	b.WriteString(item(1, "Episode 1: Starting out", time.Now().UTC().Add(-7*24*time.Hour)))
	b.WriteString(`</channel></rss>`)
	return b.String()
}

func (m *mediaFeeds) photos() string {
	item := func(n int, title string, date time.Time) string {
		return fmt.Sprintf(`<item><guid>photo-%d</guid><title>%s</title><link>https://photos.example.org/%d</link>
<pubDate>%s</pubDate><description><![CDATA[<p><a href="https://photos.example.org/%d"><img src="%s/thumb.png" width="480" height="270" alt="%s"></a></p>]]></description>
<media:thumbnail url="%s/thumb.png" width="480" height="270"/>
<media:description>The first frost of the year, on the kale bed at dawn.</media:description></item>`,
			n, title, n, date.Format(time.RFC1123Z), n, m.srv.URL, title, m.srv.URL)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel>
<title>Plot Photos</title><link>https://photos.example.org/</link><description>Photos.</description>`)
	if m.published.Load() {
		b.WriteString(item(2, "Frost on the kale", time.Now().UTC()))
	}
	b.WriteString(item(1, "Seedlings", time.Now().UTC().Add(-7*24*time.Hour)))
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// TestBrowserMediaEmails sends a YouTube-like video, a podcast episode, a
// photo post and a digest of the three through the real poller, digest
// worker and mailer, and looks at the emails in Chromium at a phone and a
// desktop width: the video email shows its thumbnail (loaded) with a play
// mark, its description and "Watch on YouTube"; the podcast email links the
// MP3 with its size and duration; the photo carries its caption; the
// digest shows every picture at one modest width; the unsubscribe link is
// on screen in each. Screenshots: artifacts/12-*.png.
func TestBrowserMediaEmails(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	ctx := context.Background()
	mf := newMediaFeeds(t)
	channel, podcast, photos := mf.srv.URL+"/channel.xml", mf.srv.URL+"/podcast.xml", mf.srv.URL+"/photos.xml"

	instant, _, err := s.st.EnsureUser(ctx, "viewer@example.net")
	if err != nil {
		t.Fatal(err)
	}
	digestReader, _, err := s.st.EnsureUser(ctx, "digest@example.net")
	if err != nil {
		t.Fatal(err)
	}
	dg, _, err := digest.Set(ctx, s.st, digestReader.ID, "Morning", "daily", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*store.User{instant, digestReader} {
		if _, _, err := s.st.GrantTrialOnce(ctx, u.ID, 50); err != nil {
			t.Fatal(err)
		}
	}
	for _, url := range []string{channel, podcast, photos} {
		f, _, err := s.st.EnsureFeed(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.st.Subscribe(ctx, instant.ID, f.ID, nil, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.st.Subscribe(ctx, digestReader.ID, f.ID, &dg.ID, true); err != nil {
			t.Fatal(err)
		}
		s.poll(ctx, url) // the first poll: what is there is seen, not mailed
	}
	mf.published.Store(true)
	s.clk.Advance(time.Hour)
	s.poll(ctx, channel)
	s.poll(ctx, podcast)
	s.poll(ctx, photos)
	s.deliver(ctx, 3)
	if dg, err = s.st.DigestByID(ctx, dg.ID); err != nil {
		t.Fatal(err)
	}
	s.clk.Set(dg.NextSlotAt)
	if n, err := s.digest.AssembleDue(ctx); err != nil || n != 1 {
		t.Fatalf("digest: %d issues, %v", n, err)
	}
	s.deliver(ctx, 4)

	emails := map[string]string{} // name → HTML part
	for _, m := range s.smtp.Messages() {
		_, html := testutil.MailParts(t, m.Raw)
		switch subj := m.Header.Get("Subject"); {
		case strings.Contains(subj, "Winter pruning"):
			emails["youtube"] = html
		case strings.Contains(subj, "Soil in winter"):
			emails["podcast"] = html
		case strings.Contains(subj, "Frost on the kale"):
			emails["photo"] = html
		case strings.HasPrefix(subj, "Your Morning"):
			emails["digest"] = html
		}
	}
	// The article email (--format article) joins these here.
	names := []string{"youtube", "podcast", "photo", "digest"}
	if len(emails) != len(names) {
		t.Fatalf("emails found: %d of %v", len(emails), names)
	}

	bctx, run := startBrowser(t, chrome)
	for _, w := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"375", 375, 812, true}, {"1280", 1280, 900, false}} {
		viewport := chromedp.EmulateViewport(w.width, w.height)
		if w.mobile {
			viewport = chromedp.EmulateViewport(w.width, w.height, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		for _, name := range names {
			run(name+" at "+w.name, viewport,
				showEmail(t, "media-"+name+".html", emails[name]),
				chromedp.WaitVisible(chromedp.CSS(`body`)),
				shot(fmt.Sprintf("12-%s-%s.png", name, w.name)),
			)
			check := func(what, js string) {
				t.Helper()
				ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js))
				if err != nil || !ok {
					t.Errorf("%s email at %s px: %s (%v)", name, w.name, what, err)
				}
			}
			// An element is on screen when it has a box inside the page's width.
			visible := `(function(el){ if (!el) return false; const r = el.getBoundingClientRect();
				return r.width > 0 && r.height > 0 && r.right <= document.documentElement.clientWidth + 1; })`
			check("the unsubscribe link is not on screen", visible+`(Array.from(document.querySelectorAll('a')).find(a => /unsubscribe/i.test(a.textContent)))`)
			check("the page is wider than the screen", `document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1`)
			if name == "youtube" || name == "digest" {
				check("the video's thumbnail did not load", `Array.from(document.images).some(i => i.src.endsWith('/thumb.png') && i.naturalWidth === 480)`)
				check("the video's description is missing", `document.body.innerText.includes('Twenty minutes on pruning apple trees')`)
				check("the video's thumbnail has no play mark", visible+`(Array.from(document.querySelectorAll('a')).find(a => a.textContent.includes('\u25b6')))`)
				check("the video does not say Watch on YouTube", visible+`(Array.from(document.querySelectorAll('a')).find(a => a.textContent.trim() === 'Watch on YouTube'))`)
			}
			if name == "photo" || name == "digest" {
				check("the photo's caption is missing", `document.body.innerText.includes('The first frost of the year, on the kale bed at dawn.')`)
			}
			if name == "digest" {
				check("the digest's pictures are not all 160 px wide",
					`document.images.length === 2 && Array.from(document.images).every(i => i.complete && Math.round(i.getBoundingClientRect().width) === 160)`)
			}
			if name == "podcast" || name == "digest" {
				check("the episode's file is not linked with its size and duration",
					visible+`(document.querySelector('a[href="https://cdn.example.org/episodes/ep2.mp3"]')) && /1:02:03/.test(document.body.innerText) && /59\.0 MB|58\.96? MB|59 MB/.test(document.body.innerText)`)
			}
		}
	}
}
