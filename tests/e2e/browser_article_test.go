package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/articletest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestBrowserArticleEmail: a reader of a summary-only feed in the
// "article" format gets a new post's article, read from its page by the
// poller, and the email is shown in the browser (16-article-email.png).
func TestBrowserArticleEmail(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	ctx := context.Background()
	site := articletest.New()
	t.Cleanup(site.Close)

	u, _, err := s.st.EnsureUser(ctx, "reader@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.st.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, 10, "seed:article", "test credits"); err != nil {
		t.Fatal(err)
	}
	f, _, err := s.st.EnsureFeed(ctx, site.FeedURL())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.st.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	format := store.FormatArticle
	if _, err := s.st.SetSubscriptionControls(ctx, u.ID, sub.ID, store.Controls{Format: &format}); err != nil {
		t.Fatal(err)
	}
	s.poll(ctx, site.FeedURL()) // the first poll knows the feed, an empty one
	site.Publish("harbour")
	s.clk.Advance(time.Hour)
	s.poll(ctx, site.FeedURL())

	if _, err := s.outbox.SendDue(ctx); err != nil { // the email waits for its article
		t.Fatal(err)
	}
	reader := article.NewReader(fetcher.Config{BaseURL: s.base, AllowPrivate: true}, s.clk)
	if n, err := s.poller.FetchArticles(ctx, reader); n != 1 || err != nil {
		t.Fatalf("FetchArticles = %d, %v; want the new post's page", n, err)
	}
	s.clk.Advance(time.Minute)
	msg := s.deliver(ctx, 1)
	_, html := testutil.MailParts(t, msg.Raw)
	for _, want := range append([]string{site.URL + articletest.ImagePath}, articletest.Paragraphs...) {
		if !strings.Contains(html, want) {
			t.Fatalf("article email lacks %q:\n%s", want, html)
		}
	}

	_, run := startBrowser(t, chrome)
	run("article email",
		chromedp.EmulateViewport(720, 900),
		showEmail(t, "article-email.html", html),
		chromedp.WaitVisible(`//img[contains(@src, "harbour")]`),
		shot("16-article-email.png"),
	)
}
