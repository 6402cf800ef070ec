package outbox

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/articletest"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

// captureTransport keeps every message handed to it, parsed.
type captureTransport struct {
	t    *testing.T
	mu   sync.Mutex
	sent map[string]parsed // by subject
	n    int
}

func (c *captureTransport) Send(_ context.Context, msgs []*mail.Msg) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		p := renderParse(c.t, m)
		c.sent[p.get("Subject")] = p
		c.n++
	}
	return make([]error, len(msgs))
}

func (c *captureTransport) Close() error { return nil }

// TestArticleFormat: a summary-only feed whose posts link to article
// pages. The email of the post whose page answers carries the article's
// paragraphs and image (absolute) and none of the navigation, ads or
// comments; the emails of posts whose page answers 500 or 404, weighs
// 20 MB, never answers or is closed by robots.txt go out with the feed's
// summary and a line saying so, all within article.Wait of being queued
// (the fake clock never gets there). One page fetch serves two readers.
func TestArticleFormat(t *testing.T) {
	names := []string{"ok", "500", "404", "huge", "slow", "robots"}
	srv := articletest.New(names...)
	t.Cleanup(srv.Close)
	fx := newFixture(t)
	ctx := context.Background()
	tr := &captureTransport{t: t, sent: map[string]parsed{}}
	ob := fx.outbox(tr, "mailer-1")
	p, err := poller.New(poller.Config{Store: fx.s, Owner: "poller-1", Clock: fx.clk,
		Fetch: fetcher.Config{BaseURL: "https://feedmail.example.com", AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	reader := article.NewReader(fetcher.Config{BaseURL: "https://feedmail.example.com", AllowPrivate: true, Timeout: 2 * time.Second}, fx.clk)

	var subs []*store.Subscription
	var users []*store.User
	for _, email := range []string{"ann@example.net", "bob@example.net"} {
		u, sub := fx.user(email, 100)
		if _, err := fx.s.SetSubscriptionControls(ctx, u.ID, sub.ID, store.Controls{Format: ptrTo(store.FormatArticle)}); err != nil {
			t.Fatal(err)
		}
		users, subs = append(users, u), append(subs, sub)
	}
	queued := fx.clk.Now()
	links := map[string]string{"nolink": ""}
	for _, name := range names {
		links[name] = srv.PostURL(name)
	}
	for name, link := range links {
		it := store.Item{FeedID: fx.feed.ID, Identity: name, Link: link, Title: "Post " + name,
			Content: "<p>" + articletest.Summary + "</p>", SeenAt: queued}
		if err := fx.s.DB.Create(&it).Error; err != nil {
			t.Fatal(err)
		}
		for i, sub := range subs {
			row := &store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:" + name + ":" + strconv.FormatInt(sub.ID, 10), UserID: users[i].ID,
				SubscriptionID: &sub.ID, ItemID: &it.ID, Address: users[i].Email, Credits: 1, State: store.OutboxQueued,
				NextAttemptAt: queued, CreatedAt: queued}
			if err := fx.s.DB.Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
	}

	// The first pass sends only the post without a link (it has no page):
	// every other email waits for its article.
	fx.pass(ob)
	if _, ok := tr.sent["Post nolink"]; len(tr.sent) != 1 || !ok {
		t.Fatalf("first pass sent %d emails (the linkless one among them: %v), want the post without a link only", len(tr.sent), ok)
	}
	if n, err := p.FetchArticles(ctx, reader); err != nil || n != len(names) {
		t.Fatalf("FetchArticles = %d, %v; want one fetch per post (%d)", n, err, len(names))
	}
	fx.clk.Advance(articleRecheck)
	for fx.pass(ob) > 0 {
	}
	if now := fx.clk.Now(); !now.Before(queued.Add(article.Wait)) {
		t.Fatalf("the clock reached the end of the wait (%v): the test proves nothing about being on time", now.Sub(queued))
	}
	if len(tr.sent) != len(links) || tr.n != 2*len(links) {
		t.Fatalf("%d emails about %d posts sent, want %d about %d (every post to both readers)", tr.n, len(tr.sent), 2*len(links), len(links))
	}
	checkArticleEmail(t, tr.sent["Post ok"], srv.URL)
	for _, name := range append(names[1:], "nolink") {
		e := tr.sent["Post "+name]
		if !strings.Contains(e.html, "read more") && !strings.Contains(e.html, "first boats came back") {
			t.Errorf("email of %s lacks the feed's summary:\n%s", name, e.html)
		}
		if !strings.Contains(e.text, mailer.ArticleMissingNote) || !strings.Contains(e.html, "could not be read from the site") {
			t.Errorf("email of %s does not say the article is missing:\n%s", name, e.text)
		}
		if strings.Contains(e.text, articletest.Paragraphs[2]) {
			t.Errorf("email of %s carries an article it could not have", name)
		}
	}
}

// checkArticleEmail checks the email of the post whose page answered.
func checkArticleEmail(t *testing.T, e parsed, base string) {
	t.Helper()
	for _, para := range articletest.Paragraphs {
		if !strings.Contains(e.html, para) || !strings.Contains(e.text, para) {
			t.Errorf("article email lacks the paragraph %q:\n%s", para, e.html)
		}
	}
	if want := base + articletest.ImagePath; !strings.Contains(e.html, want) {
		t.Errorf("article email lacks the image %s:\n%s", want, e.html)
	}
	for _, n := range articletest.Noise {
		if strings.Contains(e.html, n) || strings.Contains(e.text, n) {
			t.Errorf("article email carries %q from around the article", n)
		}
	}
	if strings.Contains(e.text, mailer.ArticleMissingNote) {
		t.Error("article email says the article is missing")
	}
}

func ptrTo[T any](v T) *T { return &v }
