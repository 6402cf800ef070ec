package preview_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

// personal matches the reader's own links, real or placeholder.
var personal = regexp.MustCompile(`https://feedmail\.example\.com/(account|unsubscribe)/[A-Za-z0-9_-]+`)

// email is a message's subject and parts with the personal links
// blanked and the reader's address replaced by the preview's.
type email struct{ subject, text, html string }

func emailOf(t *testing.T, m *mail.Msg, to string) email {
	t.Helper()
	raw, err := mailer.Render(m)
	if err != nil {
		t.Fatal(err)
	}
	text, html := testutil.MailParts(t, raw)
	norm := func(s string) string {
		s = personal.ReplaceAllString(s, "https://feedmail.example.com/$1/PERSONAL")
		if to != "" {
			s = strings.ReplaceAll(s, to, mailer.PreviewAddress)
		}
		return s
	}
	subj := ""
	if v := m.GetGenHeader(mail.HeaderSubject); len(v) > 0 {
		subj = v[0]
	}
	return email{subject: subj, text: norm(text), html: norm(html)}
}

// same fails the test where got and want differ, showing the first
// difference.
func same(t *testing.T, what string, got, want email) {
	t.Helper()
	if got.subject != want.subject {
		t.Errorf("%s: subject %q, the real email's %q", what, got.subject, want.subject)
	}
	for _, p := range []struct{ name, g, w string }{{"text", got.text, want.text}, {"html", got.html, want.html}} {
		if p.g == p.w {
			continue
		}
		i := 0
		for i < len(p.g) && i < len(p.w) && p.g[i] == p.w[i] {
			i++
		}
		t.Errorf("%s: %s part differs at byte %d:\npreview: %q\nreal:    %q", what, p.name, i,
			p.g[max(0, i-80):min(len(p.g), i+80)], p.w[max(0, i-80):min(len(p.w), i+80)])
	}
}

// TestPreviewIsTheEmailSent: readers in Paris subscribed to a feed in
// each format, and one to a daily digest, get the emails of two new
// posts from the real poller, article fetcher, digest worker and
// outbox. A preview of the feed in each format (from the store that
// polls it, and from an install that has never seen it and fetches it)
// is the email of the newest post with the same subject and body but for
// the placeholders; a preview of the daily digest is the issue they got.
func TestPreviewIsTheEmailSent(t *testing.T) {
	w := newWorld(t, preview.Limits{})
	ctx := context.Background()
	site := newSite(t, post{1, t0.Add(-72 * time.Hour), body(1)}, post{2, t0.Add(-48 * time.Hour), body(2)})
	f, _, err := w.st.EnsureFeed(ctx, site.feedURL())
	if err != nil {
		t.Fatal(err)
	}
	formats := []string{store.FormatFull, store.FormatSummary, store.FormatTitle, store.FormatArticle}
	addr := map[string]string{}
	for _, format := range formats {
		addr[format] = reader(t, w, f.ID, format+"@example.net", format, false)
	}
	digestTo := reader(t, w, f.ID, "digest@example.net", store.FormatFull, true)

	pl, err := poller.New(poller.Config{Store: w.st, Owner: "p1", Clock: w.clk,
		Fetch: fetcher.Config{BaseURL: w.links.Base, AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pl.Close)
	if _, err := pl.PollFeed(ctx, f.ID, "test"); err != nil { // the first poll only records what is there
		t.Fatal(err)
	}
	site.add(post{3, t0.Add(-14 * time.Hour), body(3)})
	site.add(post{4, t0.Add(-630 * time.Minute), body(4)}) // the newest: 00:30 on March 4 in Paris, March 3 in UTC
	w.clk.Advance(time.Minute)
	if _, err := pl.PollFeed(ctx, f.ID, "test"); err != nil {
		t.Fatal(err)
	}
	sent := deliver(t, w, pl)

	previews := map[string]*preview.Service{"stored": w.svc}
	clk2 := w.clk
	fresh := newWorldOn(t, storetest.Open(t, storetest.Options{Clock: clk2}), clk2, preview.Limits{}, true)
	previews["fetched"] = fresh.svc
	for _, how := range []string{"stored", "fetched"} {
		for _, format := range formats {
			real := find(t, sent, addr[format], "Post 4")
			res, err := previews[how].Preview(ctx, preview.Request{Feed: site.feedURL(), Format: format, Zone: "Europe/Paris"})
			if err != nil {
				t.Fatalf("%s %s: %v", how, format, err)
			}
			same(t, how+" "+format, emailOf(t, res.Message, ""), emailOf(t, real, addr[format]))
			manage, unsub := mailer.PreviewLinks(w.links)
			if !strings.Contains(res.HTML, manage) || !strings.Contains(res.HTML, unsub) || !strings.Contains(res.Text, mailer.PreviewAddress) {
				t.Errorf("%s %s: the preview lacks its placeholders:\n%s", how, format, res.Text)
			}
		}
		real := find(t, sent, digestTo, "Your Daily digest")
		res, err := previews[how].Preview(ctx, preview.Request{Feed: site.feedURL(), Delivery: "daily", Zone: "Europe/Paris"})
		if err != nil {
			t.Fatalf("%s digest: %v", how, err)
		}
		same(t, how+" digest", emailOf(t, res.Message, ""), emailOf(t, real, digestTo))
	}
	if art := find(t, sent, addr[store.FormatArticle], "Post 4"); !strings.Contains(emailOf(t, art, "").text, "read from its page") {
		t.Errorf("the real article email carries no article: the comparison proves less than it should")
	}
}

// reader makes a person in Paris with credits, subscribed (confirmed) to
// feed in format, each post by email or, with daily, in a daily digest.
func reader(t *testing.T, w *world, feedID int64, email, format string, daily bool) string {
	t.Helper()
	ctx := context.Background()
	u, _, err := w.st.EnsureUser(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.st.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, 20, "seed:"+email, "test"); err != nil {
		t.Fatal(err)
	}
	if err := w.st.SetUserTimezone(ctx, u.ID, "Europe/Paris"); err != nil {
		t.Fatal(err)
	}
	sub, err := w.st.Subscribe(ctx, u.ID, feedID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.SetSubscriptionControls(ctx, u.ID, sub.ID, store.Controls{Format: &format}); err != nil {
		t.Fatal(err)
	}
	if daily {
		sched, err := digest.ParseSchedule("daily", "Europe/Paris")
		if err != nil {
			t.Fatal(err)
		}
		dg, err := w.st.SetDigest(ctx, u.ID, "Daily", sched)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.st.SetSubscriptionDelivery(ctx, u.ID, sub.ID, &dg.ID); err != nil {
			t.Fatal(err)
		}
	}
	return email
}

// deliver sends what the poll queued as the outbox does: the article
// emails once the article fetcher read their page, the digest once the
// digest worker made its issue (its slot of 07:00 today in Paris).
func deliver(t *testing.T, w *world, pl *poller.Poller) []*mail.Msg {
	t.Helper()
	ctx := context.Background()
	tr := &captured{}
	sender := mailer.Sender{Address: "feedmail@example.com"}
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{Store: w.st, Transport: tr, Sender: sender, Links: w.links, Clock: w.clk,
		Owner: "m1", Renderers: map[string]outbox.Renderer{
			store.KindDigest: outbox.NewDigestRenderer(outbox.DigestRenderConfig{Store: w.st, Sender: sender, Links: w.links, Clock: w.clk}),
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := pl.FetchArticles(ctx, article.NewReader(fetcher.Config{BaseURL: w.links.Base, AllowPrivate: true}, w.clk)); n != 2 || err != nil {
		t.Fatalf("FetchArticles = %d, %v; want the two new posts' pages", n, err)
	}
	dw, err := digest.NewWorker(digest.Config{Store: w.st, Owner: "d1", Clock: w.clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.st.DB.Model(&store.Digest{}).Where("1 = 1").Update("next_slot_at", w.clk.Now().Add(-25*time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	if n, err := dw.AssembleDue(ctx); err != nil || n != 1 {
		t.Fatalf("AssembleDue = %d, %v; want one issue", n, err)
	}
	w.clk.Advance(20 * time.Second)
	if _, err := ob.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	return tr.all()
}

// find returns the message to whose subject starts with prefix.
func find(t *testing.T, msgs []*mail.Msg, to, prefix string) *mail.Msg {
	t.Helper()
	var seen []string
	for _, m := range msgs {
		rcpt, _ := m.GetRecipients()
		subj := m.GetGenHeader(mail.HeaderSubject)
		seen = append(seen, fmt.Sprint(rcpt, subj))
		if len(rcpt) == 1 && strings.Trim(rcpt[0], "<>") == to && len(subj) > 0 && strings.HasPrefix(subj[0], prefix) {
			return m
		}
	}
	t.Fatalf("no email to %s with a subject starting %q among %d: %v", to, prefix, len(msgs), seen)
	return nil
}
