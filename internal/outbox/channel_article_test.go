package outbox

import (
	"context"
	"encoding/json"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/articletest"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

// A webhook subscription in the "article" format waits for its post's
// article, as email does, then delivers the article's own paragraphs and
// image (absolute), none of the page around them and no note; a post
// whose article never comes is delivered once article.Wait has passed,
// with the feed's own text and the note that says so.
func TestWebhookArticleFormat(t *testing.T) {
	srv := articletest.New("ok", "slow")
	t.Cleanup(srv.Close)
	rc := channeltest.Webhook(t)
	fx, _ := newChanFixture(t, webhook.Name, channel.Target{URL: rc.URL() + "/hook"})
	ctx := context.Background()
	if _, err := fx.s.SetSubscriptionControls(ctx, fx.u.ID, fx.sub.ID, store.Controls{Format: ptrTo(store.FormatArticle)}); err != nil {
		t.Fatal(err)
	}
	p, err := poller.New(poller.Config{Store: fx.s, Owner: "poller-1", Clock: fx.clk,
		Fetch: fetcher.Config{BaseURL: "https://feedmail.example.com", AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	reader := article.NewReader(fetcher.Config{BaseURL: "https://feedmail.example.com", AllowPrivate: true, Timeout: 2 * time.Second}, fx.clk)
	post := func(name string) store.NewItem {
		return store.NewItem{Identity: name, Link: srv.PostURL(name), Title: "Post " + name,
			Content: "<p>" + articletest.Summary + "</p>"}
	}

	if n := fx.push(post("ok")); n != 1 {
		t.Fatalf("the push queued %d deliveries, want 1", n)
	}
	fx.pass(fx.ob)
	if n := len(rc.Requests()); n != 0 {
		t.Fatalf("%d requests before the article was read, want none (the delivery waits for it)", n)
	}
	if n, err := p.FetchArticles(ctx, reader); err != nil || n != 1 {
		t.Fatalf("FetchArticles = %d, %v; want the one post's page fetched", n, err)
	}
	fx.clk.Advance(articleRecheck)
	fx.pass(fx.ob)
	d := acceptedPost(t, rc, 1)
	for _, para := range articletest.Paragraphs {
		if !strings.Contains(d.ContentHTML, para) || !strings.Contains(d.ContentText, para) {
			t.Errorf("the delivery lacks the article's paragraph %q:\n%s", para, d.ContentHTML)
		}
	}
	if want := srv.URL + articletest.ImagePath; !strings.Contains(d.ContentHTML, want) {
		t.Errorf("the delivery lacks the article's image %s:\n%s", want, d.ContentHTML)
	}
	for _, n := range articletest.Noise {
		if strings.Contains(d.ContentHTML, n) || strings.Contains(d.ContentText, n) {
			t.Errorf("the delivery carries %q from around the article", n)
		}
	}
	if strings.Contains(d.ContentText, mailer.ArticleMissingNote) {
		t.Error("the delivery of a read article says the article is missing")
	}

	// Nobody reads the second post's page: it waits, then goes out with
	// the feed's text once article.Wait has passed.
	fx.push(post("slow"))
	fx.pass(fx.ob)
	if n := len(rc.Requests()); n != 1 {
		t.Fatalf("%d requests while the second post's article is awaited, want 1 (the first post's)", n)
	}
	fx.clk.Advance(article.Wait)
	fx.pass(fx.ob)
	d = acceptedPost(t, rc, 2)
	if !strings.Contains(d.ContentText, mailer.ArticleMissingNote) || !strings.Contains(d.ContentHTML, "could not be read from the site") {
		t.Errorf("the delivery without its article does not say so:\n%s\n%s", d.ContentText, d.ContentHTML)
	}
	if !strings.Contains(d.ContentText, "first boats came back") || strings.Contains(d.ContentText, articletest.Paragraphs[2]) {
		t.Errorf("the delivery without its article should carry the feed's summary only:\n%s", d.ContentText)
	}
}

// acceptedPost returns the post of the last request rc accepted, after
// checking that it accepted n.
func acceptedPost(t *testing.T, rc *channeltest.Receiver, n int) channel.PostJSON {
	t.Helper()
	got := rc.Accepted()
	if len(got) != n {
		t.Fatalf("receiver accepted %d requests, want %d (all: %d)", len(got), n, len(rc.Requests()))
	}
	var body struct {
		Data channel.PostJSON `json:"data"`
	}
	if err := json.Unmarshal(got[n-1].Body, &body); err != nil {
		t.Fatalf("body %s: %v", got[n-1].Body, err)
	}
	return body.Data
}

// PostOf shows the article only to an "article" subscription whose
// article is ready, its relative links made absolute against the page;
// an "article" subscription without one gets the feed's text after the
// note, in the HTML and the text; other formats ignore the article.
func TestPostOfArticle(t *testing.T) {
	d := store.ItemDelivery{
		Item: &store.Item{ID: 7, Link: "https://blog.example.org/p/7", Title: "Seven", Content: "<p>Feed teaser.</p>"},
		Feed: &store.Feed{Title: "Blog", URL: "https://blog.example.org/feed.xml"},
	}
	ready := map[int64]store.ItemArticle{7: {ItemID: 7, State: store.ArticleReady, URL: "https://blog.example.org/a/7",
		HTML: `<p>The whole <a href="/more">article</a>.</p><script>x()</script>`}}
	failed := map[int64]store.ItemArticle{7: {ItemID: 7, State: store.ArticleFailed, Reason: "404"}}
	for _, tc := range []struct {
		name, format string
		arts         map[int64]store.ItemArticle
		want, not    []string // in HTML (escaped) and text alike, or absent from both
		wantHTML     string
	}{
		{name: "ready", format: store.FormatArticle, arts: ready,
			want: []string{"The whole", "article"}, not: []string{"Feed teaser", mailer.ArticleMissingNote, "x()"},
			wantHTML: `href="https://blog.example.org/more"`},
		{name: "failed", format: store.FormatArticle, arts: failed,
			want: []string{"Feed teaser", mailer.ArticleMissingNote}, not: []string{"The whole"}},
		{name: "none", format: store.FormatArticle,
			want: []string{"Feed teaser", mailer.ArticleMissingNote}},
		{name: "full ignores it", format: store.FormatFull, arts: ready,
			want: []string{"Feed teaser"}, not: []string{"The whole", mailer.ArticleMissingNote}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.Subscription = &store.Subscription{Format: tc.format}
			p := mailer.PostOf(d, tc.arts)
			for _, w := range tc.want {
				if !strings.Contains(p.HTML, html.EscapeString(w)) || !strings.Contains(p.Text, w) {
					t.Errorf("post lacks %q:\nHTML %s\ntext %s", w, p.HTML, p.Text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(p.HTML, html.EscapeString(n)) || strings.Contains(p.Text, n) {
					t.Errorf("post carries %q:\nHTML %s\ntext %s", n, p.HTML, p.Text)
				}
			}
			if !strings.Contains(p.HTML, tc.wantHTML) {
				t.Errorf("HTML lacks %q: %s", tc.wantHTML, p.HTML)
			}
		})
	}
}
