package notices

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// TestNotices pins the key, subject, a sentence of the text and the
// buttons of every notice.
func TestNotices(t *testing.T) {
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://fm.example", sign, "feedmail@fm.example")
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	since := now.Add(-100 * 24 * time.Hour)
	feed := store.Feed{ID: 7, URL: "https://blog.example/feed", LastError: "503 Service Unavailable", ErrorsSince: &since}
	key := func(k string, n store.Notice) (string, store.Notice) { return k, n }
	cases := []struct {
		name            string
		key             string
		n               store.Notice
		wantKey, prefix string
		says            string
		buttons         []string
	}{
		{name: "confirm", wantKey: "confirm:3:29540700", prefix: "Confirm your feedmail subscription",
			says:    "from the feed “Blog” (https://blog.example/feed) to a@example.com, daily.\n\nPress the button",
			buttons: []string{"Confirm subscription"}},
		{name: "confirm by operator", wantKey: "confirm:3:29540700", prefix: "Confirm your feedmail subscription",
			says:    "or the operator of this feedmail for you) asked feedmail to send new posts from the feed “Blog”",
			buttons: []string{"Confirm subscription"}},
		{name: "already", wantKey: "already:3:29540700", prefix: "You already get this feed from feedmail",
			says: "from the feed “Blog” to a@example.com. You already get them, so nothing changed.", buttons: []string{"Open my account"}},
		{name: "sign-in", wantKey: "signin:5:29540700", prefix: "Your feedmail sign-in link",
			says: "it works for an hour", buttons: []string{"Open my account"}},
		{name: "import", wantKey: "import:5:1772442000", prefix: "Confirm the feeds imported into your feedmail",
			says: "2 feeds were imported for a@example.com", buttons: []string{"Review and confirm"}},
		{name: "gone", wantKey: "gone:7:5", prefix: "A feed you follow is gone: https://blog.example/feed",
			says: `answered "410 Gone"`, buttons: []string{"Why (feed status)", "Your subscriptions"}},
		{name: "blacklisted", wantKey: "blacklisted:7:2025-11-22:5",
			prefix: "A feed you follow has stopped working: https://blog.example/feed",
			says:   "(last: 503 Service Unavailable), so feedmail stopped polling it.", buttons: []string{"Why (feed status)", "Your subscriptions"}},
		{name: "credits", prefix: "Your feedmail credits have run out", says: "They wait for up to 30 days. As soon as you add credits",
			buttons: []string{"Buy credits", "Your account"}},
		{name: "credits, payments off", prefix: "Your feedmail credits have run out",
			says: "This feedmail does not sell credits: ask the person who runs it to add some.", buttons: []string{"Your account"}},
	}
	cases[0].key, cases[0].n = Confirm(l, now, 3, "Blog", feed.URL, "a@example.com", "daily")
	cases[1].key, cases[1].n = ConfirmByOperator(l, now, 3, "Blog", "a@example.com")
	cases[2].key, cases[2].n = AlreadySubscribed(l, now, 3, 5, "Blog", "a@example.com")
	cases[3].key, cases[3].n = SignIn(l, now, 5, "a@example.com")
	cases[4].key, cases[4].n = ImportConfirm(l, now, 5, "a@example.com", 2)
	cases[5].key, cases[5].n = key(FeedGoneKey(7, 5), FeedGone(&l, now, feed, 5))
	cases[6].key, cases[6].n = key(FeedBlacklistedKey(feed, 5), FeedBlacklisted(&l, now, feed, 5))
	cases[7].n = CreditsOut(l, now, 30*24*time.Hour, 5, true)
	cases[8].n = CreditsOut(l, now, 30*24*time.Hour, 5, false)
	if buy := cases[7].n.Links[0].URL; !strings.HasPrefix(buy, "https://fm.example/credits?token=") {
		t.Errorf("Buy credits goes to %q, want the credits page with the account's token", buy)
	}
	for _, c := range cases {
		if c.key != c.wantKey || c.n.Subject != c.prefix || !strings.Contains(c.n.Text, c.says) {
			t.Errorf("%s: key %q subject %q text %q", c.name, c.key, c.n.Subject, c.n.Text)
		}
		var got []string
		for _, b := range c.n.Links {
			if !strings.HasPrefix(b.URL, "https://fm.example/") {
				t.Errorf("%s: button %q goes to %q", c.name, b.Label, b.URL)
			}
			got = append(got, b.Label)
		}
		if strings.Join(got, ",") != strings.Join(c.buttons, ",") {
			t.Errorf("%s: buttons %q, want %q", c.name, got, c.buttons)
		}
	}
	if n := FeedGone(nil, now, feed, 5); len(n.Links) != 0 {
		t.Errorf("gone without links has buttons %v", n.Links)
	}
	if n := CreditsOut(links.Links{}, now, time.Hour, 5, true); len(n.Links) != 0 {
		t.Errorf("credits without a base URL has buttons %v", n.Links)
	}
}

// TestConfirmSubjectHasNoFeedText: whatever a feed calls itself, the
// subject of a confirmation (and of "already subscribed") is feedmail's
// own; the body quotes the title, on one line and cut short.
func TestConfirmSubjectHasNoFeedText(t *testing.T) {
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("https://fm.example", sign, "feedmail@fm.example")
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	hostile := "URGENT: your bank account is locked, call +1 555 0100\r\nBcc: x@evil.example " + strings.Repeat("spam ", 50)
	_, c := Confirm(l, now, 1, hostile, "https://evil.example/feed", "v@example.com", DeliveryInstant)
	_, o := ConfirmByOperator(l, now, 1, hostile, "v@example.com")
	_, a := AlreadySubscribed(l, now, 1, 2, hostile, "v@example.com")
	for _, n := range []store.Notice{c, o, a} {
		if strings.Contains(n.Subject, "URGENT") || strings.Contains(n.Subject, "bank") {
			t.Errorf("subject %q carries the feed's title", n.Subject)
		}
		if !strings.Contains(n.Text, "“URGENT: your bank account is locked, call +1 555 0100 Bcc: x@evil.example spam") ||
			strings.Contains(n.Text, "\r") || strings.Count(n.Text, "spam") > 20 {
			t.Errorf("body does not quote the title on one line, cut short: %q", n.Text)
		}
	}
}
