package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestFiltersAndFormatEndToEnd: a reader with an instant subscription
// that includes only "golang" (titles only) and a digest subscription
// that excludes "sponsored" gets, of posts published on both feeds, only
// those that pass: filtered-out posts are neither mailed nor charged, and
// never join the digest, whose price counts what it holds. Switching the
// instant subscription to "summary" makes the next email a summary.
func TestFiltersAndFormatEndToEnd(t *testing.T) {
	s := newDigestStack(t)
	u, d, dfeeds := s.reader("picky@example.com", "Morning", "@every 10s", 100, 1)
	start := s.balance(u)

	instant := s.farm.AddFeed(farm.Spec{Title: "Language news", ItemCount: 2, ETag: farm.ETagStrong})
	feed, _, err := s.st.EnsureFeed(s.ctx, instant.URL())
	if err != nil {
		t.Fatal(err)
	}
	isub, err := s.st.Subscribe(s.ctx, u.ID, feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	s.poll(instant)
	set := func(sub int64, c store.Controls) {
		t.Helper()
		if _, err := s.st.SetSubscriptionControls(s.ctx, u.ID, sub, c); err != nil {
			t.Fatal(err)
		}
	}
	set(isub.ID, store.Controls{Include: strp("golang"), Format: strp(store.FormatTitle)})
	dsubs, err := s.st.SubscriptionsOfDigest(s.ctx, d.ID)
	if err != nil || len(dsubs) != 1 {
		t.Fatalf("digest subscriptions %v, %v", dsubs, err)
	}
	set(dsubs[0].ID, store.Controls{Exclude: strp("sponsored")})

	s.clk.Advance(time.Minute)
	now := s.clk.Now()
	instant.Publish(
		farm.Item{Title: "Golang 1.26 is out", Content: "<p>Body of the release post.</p>", Published: now},
		farm.Item{Title: "Rust 2.0", Content: "<p>Not for this reader.</p>", Published: now},
		farm.Item{Title: "Weekly links", Content: "<p>A <b>golang</b> link among others.</p>", Published: now},
	)
	s.poll(instant)
	dfeeds[0].Publish(
		farm.Item{Title: "Sponsored: seeds", Content: "<p>Buy now.</p>", Published: now},
		farm.Item{Title: "Beans are up", Content: "<p>Sponsored by nobody, but the word is there.</p>", Published: now},
		farm.Item{Title: "Tomatoes", Content: "<p>Red at last.</p>", Published: now},
	)
	s.poll(dfeeds[0])

	msgs := s.send(2)
	subjects := map[string]string{}
	for _, m := range msgs {
		text, _ := testutil.MailParts(t, m.Raw)
		subjects[m.Header.Get("Subject")] = text
	}
	if len(msgs) != 2 || subjects["Golang 1.26 is out"] == "" || subjects["Weekly links"] == "" {
		t.Fatalf("instant emails %v, want the two golang posts", keys(subjects))
	}
	if text := subjects["Golang 1.26 is out"]; strings.Contains(text, "Body of the release post") {
		t.Errorf("a title-only email shows the post:\n%s", text)
	}
	if b := s.balance(u); b != start-2 {
		t.Errorf("balance %d after two emails, want %d (filtered posts cost nothing)", b, start-2)
	}

	var held []string
	if err := s.st.DB.Table("digest_items").Joins("JOIN items ON items.id = digest_items.item_id").
		Where("digest_items.digest_id = ?", d.ID).Order("items.title").Pluck("items.title", &held).Error; err != nil {
		t.Fatal(err)
	}
	if strings.Join(held, "|") != "Tomatoes" {
		t.Fatalf("digest holds %q, want only the post without \"sponsored\"", held)
	}
	if n := s.slot(d.ID); n != 1 {
		t.Fatalf("issues queued: %d", n)
	}
	msgs = s.send(3)
	digestMail := msgs[2]
	if got := digestMail.Header.Get("Subject"); !strings.HasSuffix(got, ": 1 new post from 1 feed") {
		t.Errorf("digest subject %q", got)
	}
	text, _ := testutil.MailParts(t, digestMail.Raw)
	if !strings.Contains(text, "Tomatoes") || strings.Contains(text, "Sponsored") || strings.Contains(text, "Beans") {
		t.Errorf("digest text:\n%s", text)
	}
	if b := s.balance(u); b != start-3 {
		t.Errorf("balance %d after the digest, want %d", b, start-3)
	}

	// The format changes for the next email.
	set(isub.ID, store.Controls{Format: strp(store.FormatSummary)})
	s.clk.Advance(time.Minute)
	long := "<p>Golang " + strings.Repeat("lorem ", 80) + "LASTWORD</p><p><img src=\"https://example.org/x.png\" alt=\"chart\"></p>"
	instant.Publish(farm.Item{Title: "Golang deep dive", Content: long, Published: s.clk.Now()})
	s.poll(instant)
	msgs = s.send(4)
	text, html := testutil.MailParts(t, msgs[3].Raw)
	if msgs[3].Header.Get("Subject") != "Golang deep dive" || !strings.Contains(text, "Golang lorem lorem") ||
		strings.Contains(text, "LASTWORD") || !strings.Contains(text, "…") || strings.Contains(html, "<img") {
		t.Errorf("summary email %q:\n%s", msgs[3].Header.Get("Subject"), text)
	}
	if b := s.balance(u); b != start-4 {
		t.Errorf("balance %d, want %d", b, start-4)
	}
}

func strp(s string) *string { return &s }

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
