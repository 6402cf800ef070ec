package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestBrowserPauseResume pauses one feed with an end date on the account
// page, checks that a post published meanwhile is not mailed, resumes
// it, gets the next post, then pauses and resumes the whole account.
// Screenshots:
//
//	20-account-feed-paused.png     a feed paused until a date
//	21-account-resumed.png         after resuming it
//	22-account-paused.png          the whole account paused until resumed
func TestBrowserPauseResume(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	ctx := context.Background()

	feed := s.farm.AddFeed(farm.Spec{Title: "Pond Notes", ItemCount: 2})
	u, _, err := s.st.EnsureUser(ctx, "pauser@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.st.GrantTrialOnce(ctx, u.ID, 10); err != nil {
		t.Fatal(err)
	}
	f, _, err := s.st.EnsureFeed(ctx, feed.URL())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.st.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	s.poll(ctx, feed.URL()) // the first poll: seen, nothing mailed
	id := strconv.FormatInt(sub.ID, 10)
	bctx, run := startBrowser(t, chrome)
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	account := s.links.Account(u.ID, s.clk.Now())
	until := s.clk.Now().UTC().AddDate(0, 0, 14).Format(time.DateOnly)

	// 1. Pause the feed until a date.
	run("pause a feed", chromedp.EmulateViewport(1100, 900),
		chromedp.Navigate(account),
		chromedp.WaitVisible(chromedp.CSS(`#pause-until-`+id)),
		chromedp.SetValue(chromedp.CSS(`#pause-until-`+id), until),
		chromedp.Click(`//button[text()="Pause this feed"]`),
		chromedp.WaitVisible(`//button[text()="Resume this feed"]`),
		shot("20-account-feed-paused.png"),
	)
	if body := text("#subscriptions"); !strings.Contains(body, "Paused until") || !strings.Contains(body, strings.Split(until, "-")[0]) {
		t.Fatalf("the feed's card does not say it is paused:\n%s", body)
	}

	// 2. A post published while paused is not mailed, not even later.
	s.clk.Advance(20 * time.Minute)
	feed.Publish(farm.Item{Title: "Frogspawn spotted", Content: "<p>Early this year.</p>"})
	s.poll(ctx, feed.URL())
	if n := outboxOf(t, s.st, sub.ID); n != 0 {
		t.Fatalf("%d emails queued for a paused feed", n)
	}

	// 3. Resume it; the next post is mailed.
	run("resume a feed",
		chromedp.Click(`//button[text()="Resume this feed"]`),
		chromedp.WaitVisible(`//button[text()="Pause this feed"]`),
		shot("21-account-resumed.png"),
	)
	if flash := text(".flash"); !strings.Contains(flash, "Resumed") {
		t.Fatalf("flash after resuming: %q", flash)
	}
	s.clk.Advance(20 * time.Minute)
	feed.Publish(farm.Item{Title: "Newts are back", Content: "<p>Three of them.</p>"})
	s.poll(ctx, feed.URL())
	msg := s.deliver(ctx, 1)
	if subj := msg.Header.Get("Subject"); !strings.Contains(subj, "Newts are back") {
		t.Fatalf("after resuming, the email is %q; want the new post (and never the one of the pause)", subj)
	}

	// 4. The whole account, until resumed.
	run("pause the account",
		chromedp.Click(`//button[text()="Pause all email"]`),
		chromedp.WaitVisible(`//button[text()="Resume all email"]`),
		shot("22-account-paused.png"),
	)
	if body := text("main"); !strings.Contains(body, "Paused until you resume") {
		t.Fatalf("the account page does not say the account is paused:\n%s", body)
	}
	got, err := s.st.UserByID(ctx, u.ID)
	if err != nil || got.PausedAt == nil || got.PausedUntil != nil {
		t.Fatalf("account after pausing: %+v %v", got, err)
	}
	run("resume the account",
		chromedp.Click(`//button[text()="Resume all email"]`),
		chromedp.WaitVisible(`//button[text()="Pause all email"]`),
	)
	if got, _ = s.st.UserByID(ctx, u.ID); got.PausedAt != nil || got.Balance != 9 {
		t.Fatalf("account after resuming: %+v; want not paused, charged for one email only", got)
	}
}

// outboxOf counts the outbox rows of subscription subID.
func outboxOf(t *testing.T, st *store.Store, subID int64) int64 {
	t.Helper()
	var n int64
	if err := st.DB.Model(&store.OutboxRow{}).Where("subscription_id = ?", subID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
