package mailer

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
)

// maxSpamScore is the most SpamAssassin may give any email feedmail sends,
// and maxImageSpamScore the most for a post led by an image (a video's
// thumbnail, a photo with a caption): SpamAssassin counts any image in a
// short HTML part against it (HTML_IMAGE_ONLY_nn: an <img> in an HTML
// part of at most 3,200 characters of source, up to 2.8 points), which the
// caption, the picture line and the footer's lines keep it from.
const (
	maxSpamScore      = 0.5
	maxImageSpamScore = 1.0
)

// spamKinds are the kinds of email the scores are reported by, in order.
var spamKinds = []string{"item", "digest", "notice", "video", "photo"}

// spamKind is the kind of a sample of sampleMsgs, by its name.
func spamKind(name string) string {
	for _, k := range spamKinds {
		if strings.HasPrefix(name, k) {
			return k
		}
	}
	return name
}

// sampleMsgs returns one message of every template feedmail sends, as the
// outbox would compose them: an item (with content, and without), a
// digest, and every notice of package notices.
func sampleMsgs(t testing.TB, s Sender) map[string]*mail.Msg {
	t.Helper()
	signer, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://feedmail.example.com", signer, s.Address)
	now := testDate
	out := map[string]*mail.Msg{}
	render := func(name string, m *mail.Msg, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = m
	}

	footer := Footer{
		FeedTitle: "The Changelog", FeedURL: "https://changelog.example.com/feed", SiteURL: "https://changelog.example.com/",
		ManageURL: l.Account(7, now), UnsubscribeURL: l.Unsubscribe(11),
		StatusURL: l.Status("https://changelog.example.com/feed"),
	}
	item := ItemEmail{
		To: "reader@example.org", FeedTitle: "The Changelog", FeedURL: footer.FeedURL,
		ListID: s.FeedListID(3), MessageID: s.ItemMessageID(11, 42), Date: now,
		ItemTitle: "Releasing version 2.4 of our parser", ItemLink: "https://changelog.example.com/posts/parser-2-4",
		ItemHTML: `<p>We have just tagged version 2.4 of the parser. It reads documents about twice as fast as 2.3 ` +
			`and uses a third less memory on large inputs.</p>` +
			`<p>The <a href="/docs/upgrade">upgrade notes</a> list the two changes that need your attention: ` +
			`the streaming interface now returns errors instead of panicking, and the default limits are lower.</p>` +
			`<ul><li>Faster tokenizer</li><li>Smaller syntax tree</li><li>Better error messages with line numbers</li></ul>` +
			`<p><img src="/img/benchmark.png" alt="Benchmark chart" width="600" height="300"></p>` +
			`<p>Thanks to everyone who sent reports and patches during the beta.</p>`,
		Author: "Sam Writer", Published: now.Add(-3 * time.Hour), Footer: footer,
	}
	m, err := s.Item(item)
	render("item", m, err)
	bare := item
	bare.ItemHTML, bare.MessageID = "", s.ItemMessageID(11, 43)
	m, err = s.Item(bare)
	render("item without content", m, err)

	video := item
	video.ItemTitle, video.ItemLink, video.MessageID = "Planting garlic, start to finish", "https://www.youtube.com/watch?v=dQw4w9WgXcQ", s.ItemMessageID(11, 44)
	video.FeedTitle, video.Author, video.ItemHTML = "Garden Diary", "Garden Diary", ""
	video.Media = model.ItemMedia{Thumbnail: "https://i.ytimg.com/vi/dQw4w9WgXcQ/hqdefault.jpg",
		Description: "How we plant garlic in October: cloves, depth and mulch.", Player: "https://www.youtube.com/v/dQw4w9WgXcQ?version=3"}
	m, err = s.Item(video)
	render("video", m, err)
	vimeo := item
	vimeo.ItemTitle, vimeo.ItemLink, vimeo.MessageID = "A short film", "https://vimeo.com/123456", s.ItemMessageID(11, 52)
	vimeo.FeedTitle, vimeo.Author = "Staff Picks", "Someone"
	vimeo.ItemHTML = `<p><a href="https://vimeo.com/123456"><img src="https://i.vimeocdn.com/video/1_200x150.jpg" alt="" /></a></p>` +
		`<p>A film about the sea.</p><p><strong>Cast:</strong> <a href="https://vimeo.com/someone">Someone</a></p>`
	vimeo.Media = model.ItemMedia{Thumbnail: "https://i.vimeocdn.com/video/1_960x540.jpg", Player: "https://player.vimeo.com/video/123456"}
	m, err = s.Item(vimeo)
	render("video with text", m, err)
	photo := item
	photo.ItemTitle, photo.ItemLink, photo.MessageID = "Frost on the kale", "https://garden.example.net/photos/frost", s.ItemMessageID(11, 45)
	photo.ItemHTML = `<p><a href="https://garden.example.net/photos/frost"><img src="https://garden.example.net/photos/frost.jpg" width="1024" height="768" alt="Frost on the kale"></a></p>`
	photo.Media = model.ItemMedia{Description: "The first frost of the year came on Tuesday night; the kale is sweeter for it."}
	m, err = s.Item(photo)
	render("photo", m, err)

	// Image-led news posts: one paragraph and one 640×427 photo, the photo
	// first or after the text, with and without alt text, as news feeds
	// write them.
	for i, body := range []string{
		`<p><img src="https://news.example.net/media/harbour-640.jpg" width="640" height="427" alt="Boats in the harbour at dawn"></p>` +
			`<p>The harbour reopened on Monday after three weeks of repairs to the sea wall.</p>`,
		`<p>The harbour reopened on Monday after three weeks of repairs to the sea wall.</p>` +
			`<p><img src="https://news.example.net/media/harbour-640.jpg" width="640" height="427"></p>`,
		`<figure><img src="https://news.example.net/media/harbour-640.jpg" alt=""></figure>` +
			`<p>The harbour reopened on Monday after three weeks of repairs to the sea wall, the city said.</p>`,
	} {
		news := item
		news.FeedTitle, news.Author = "City News", ""
		news.ItemTitle, news.ItemLink = "Harbour reopens after repairs", "https://news.example.net/2026/03/harbour-reopens"
		news.MessageID, news.ItemHTML = s.ItemMessageID(11, int64(46+i)), body
		news.Footer.FeedTitle, news.Footer.SiteURL = "City News", "https://news.example.net/"
		m, err = s.Item(news)
		render(fmt.Sprintf("photo news %d", i+1), m, err)
	}
	// The shortest an image-led email gets: short names, no site, no
	// author, a picture without alt text or size, and a sentence or none.
	for i, body := range []string{`<img src="https://cn.example/h.jpg">`, `<p><img src="https://cn.example/h.jpg"></p><p>Open again.</p>`} {
		short := item
		short.FeedTitle, short.Author, short.ItemTitle, short.ItemLink = "CN", "", "Harbour", "https://cn.example/h"
		short.Footer.FeedTitle, short.Footer.SiteURL, short.Footer.FeedURL, short.FeedURL = "CN", "", "https://cn.example/f", "https://cn.example/f"
		short.MessageID, short.ItemHTML = s.ItemMessageID(11, int64(50+i)), body
		m, err = s.Item(short)
		render(fmt.Sprintf("photo short %d", i+1), m, err)
	}

	digest := DigestEmail{
		To: "reader@example.org", DigestName: "Morning", MessageID: s.MessageID("digest.5"), Date: now, ListID: s.DigestListID(2),
		Footer: Footer{ManageURL: l.Account(7, now), UnsubscribeURL: l.DigestUnsubscribe(2)},
		Feeds: []DigestFeed{
			{Title: "The Changelog", SiteURL: "https://changelog.example.com/", Items: []DigestItem{
				{Title: "Releasing version 2.4 of our parser", Link: "https://changelog.example.com/posts/parser-2-4",
					ExcerptHTML: "We have just tagged version 2.4 of the parser. It reads documents about twice as fast as 2.3.", Published: now},
				{Title: "Notes from the maintainers meeting", Link: "https://changelog.example.com/posts/meeting",
					ExcerptHTML: "We talked about the release schedule, the test farm and the documentation site.", Published: now.Add(-time.Hour)},
			}},
			{Title: "Garden Diary", SiteURL: "https://garden.example.net/", Items: []DigestItem{
				{Title: "Planting garlic in October", Link: "https://garden.example.net/garlic",
					ExcerptHTML: "Cloves go in pointed end up, a hand deep, before the ground freezes.", Published: now.Add(-5 * time.Hour)},
			}},
		},
	}
	m, err = s.Digest(digest)
	render("digest", m, err)
	pictures := digest
	pictures.MessageID = s.MessageID("digest.6")
	pictures.Feeds = append([]DigestFeed{{Title: "Garden Diary", SiteURL: "https://garden.example.net/", Items: []DigestItem{
		{Title: video.ItemTitle, Link: video.ItemLink, ExcerptHTML: video.Media.Description, Published: now,
			Thumbnail: video.Media.Thumbnail, Player: video.Media.Player},
		{Title: photo.ItemTitle, Link: photo.ItemLink, ExcerptHTML: photo.Media.Description, Published: now,
			Thumbnail: "https://garden.example.net/photos/frost.jpg"},
	}}}, digest.Feeds...)
	m, err = s.Digest(pictures)
	render("digest with images", m, err)

	feed := store.Feed{ID: 3, Title: "The Changelog", URL: "https://changelog.example.com/feed", LastError: "HTTP 404 Not Found"}
	type named struct {
		name string
		n    store.Notice
	}
	_, confirm := notices.Confirm(l, now, 11, "The Changelog", feed.URL, "reader@example.org", notices.DeliveryInstant)
	_, byOp := notices.ConfirmByOperator(l, now, 11, "The Changelog", "reader@example.org")
	_, already := notices.AlreadySubscribed(l, now, 11, 7, "The Changelog", "reader@example.org")
	_, signIn := notices.SignIn(l, now, 7, "reader@example.org")
	_, imp := notices.ImportConfirm(l, now, 7, "reader@example.org", 12)
	all := []named{
		{"notice Confirm", confirm}, {"notice ConfirmByOperator", byOp}, {"notice AlreadySubscribed", already},
		{"notice SignIn", signIn}, {"notice ImportConfirm", imp},
		{"notice FeedGone", notices.FeedGone(&l, now, feed, 7)},
		{"notice FeedBlacklisted", notices.FeedBlacklisted(&l, now, feed, 7)},
		{"notice CreditsOut", notices.CreditsOut(l, now, 30*24*time.Hour, 7, true)},
	}
	for i, n := range all {
		m, err := s.Notice(NoticeEmailOf(n.n, "reader@example.org", s.MessageID("notice-"+strconv.Itoa(i+1)), now))
		render(n.name, m, err)
	}
	return out
}

// sampleEmails is sampleMsgs rendered.
func sampleEmails(t testing.TB, s Sender) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, m := range sampleMsgs(t, s) {
		raw, err := Render(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = raw
	}
	return out
}

// spamStatusRe reads the score and the rules hit from X-Spam-Status.
var spamStatusRe = regexp.MustCompile(`(?m)^X-Spam-Status: \w+, score=(-?[0-9.]+) required=[0-9.]+(?:\s+tests=([^\n]*(?:\n[ \t][^\n]*)*))?`)

// TestSpamAssassinScores scores every email template with SpamAssassin
// (local rules only: no network tests) and wants each at most
// maxSpamScore. SpamAssassin runs with an empty user preferences file and
// HOME in the test's temporary folder, so it writes nothing elsewhere.
func TestSpamAssassinScores(t *testing.T) {
	bin, err := exec.LookPath("spamassassin")
	if err != nil {
		testutil.SkipOrFail(t, "spamassassin is not installed (Debian: apt-get install spamassassin)")
	}
	home := t.TempDir()
	prefs := filepath.Join(home, "user_prefs")
	if err := os.WriteFile(prefs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	emails := sampleEmails(t, testSender())
	worst := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(emails)) {
		raw := bytes.ReplaceAll(emails[name], []byte("\r\n"), []byte("\n"))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, bin, "-L", "-t", "-p", prefs)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C"}
		cmd.Dir = home
		cmd.Stdin = bytes.NewReader(raw)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("%s: spamassassin: %v\n%s", name, err, stderr.String())
		}
		mm := spamStatusRe.FindSubmatch(stdout.Bytes())
		if mm == nil {
			t.Fatalf("%s: no X-Spam-Status in spamassassin's output:\n%s", name, stdout.String())
		}
		score, err := strconv.ParseFloat(string(mm[1]), 64)
		if err != nil {
			t.Fatalf("%s: score %q: %v", name, mm[1], err)
		}
		tests, _, _ := strings.Cut(strings.Join(strings.Fields(string(mm[2])), " "), " autolearn=")
		tests = strings.ReplaceAll(tests, ", ", ",")
		t.Logf("%-26s score %4.1f  tests=%s", name, score, tests)
		kind := spamKind(name)
		if w, ok := worst[kind]; !ok || score > w {
			worst[kind] = score
		}
		limit := maxSpamScore
		if kind == "video" || kind == "photo" {
			limit = maxImageSpamScore
		}
		if score > limit {
			t.Errorf("%s: SpamAssassin score %.1f > %.1f (tests=%s)", name, score, limit, tests)
		}
	}
	var line []string
	for _, k := range spamKinds {
		w, ok := worst[k]
		if !ok {
			t.Errorf("no sample email of kind %s", k)
			continue
		}
		line = append(line, fmt.Sprintf("%s %.1f", k, w))
	}
	t.Logf("worst SpamAssassin score per kind: %s", strings.Join(line, ", "))
}
