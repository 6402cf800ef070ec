// Package e2e drives feedmail the way a person does: in a real browser
// (Debian's Chromium, headless, through chromedp) against the real web
// server, poller, digest worker and mailer, with a fake feed host (package
// farm) and an in-process SMTP server (package smtptest).
//
// The test saves screenshots in e2e/artifacts/ (git-ignored):
//
//	01-signup.png          the signup form, filled in, on a desktop width
//	02-pick-feed.png       the site advertises two feeds: pick one
//	03-check-inbox.png     "check your inbox" after submitting
//	04-confirm.png         the confirmation page with its button
//	05-account.png         the account page listing the subscription
//	06-status.png          the public status page of the feed after two polls
//	07-instant-email.png   the HTML part of a delivered instant email
//	08-digest-email.png    the HTML part of a delivered digest email
//	09-unsubscribed.png    the page after unsubscribing from the email's link
//	10-signup-phone.png    the signup form with an inline error on a phone width
//	11-*-1280.png, -375.png the status and account pages at a desktop and a phone width
//	12-settings-error.png  a subscription's filters form with a bad regular expression
//	13-settings-saved.png  the filters and format saved, on a fresh load of the account page
//	15-signup-forecast.png the signup page of a known feed: what each delivery would cost
//	16-article-email.png   an email in the article format (browser_article_test.go)
//	17-preview-*.png       the signup form's preview of the email, without script and in each
//	                       format and a digest (browser_preview_test.go)
//	18-preview-hostile.png the preview of a post full of scripts, forms and remote styles
//
// It is skipped when Chromium is absent, and fails then under CI=true.
//
// The package holds tests only, and they must not reach beyond loopback:
// feeds come from the fake host, mail goes to the in-process SMTP server.
package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/mailer"
	"github.com/feedmail/feedmail/poller"
)

// chromiumPath finds Debian's Chromium (or $FEEDMAIL_CHROMIUM).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FEEDMAIL_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	testutil.SkipOrFail(t, "Chromium not found (apt-get install chromium)")
	return ""
}

// stack is everything feedmail runs, wired as `feedmail serve` wires it,
// on one fake clock.
type stack struct {
	t      *testing.T
	clk    *clock.Fake
	st     *store.Store
	farm   *farm.Farm
	smtp   *smtptest.Server
	base   string
	links  links.Links
	poller *poller.Poller
	outbox *outbox.Outbox
	digest *digest.Worker
}

// newParts starts what every stack of this suite has: a fake clock, a
// store, a feed farm, an SMTP server and a token signer for secret.
func newParts(t *testing.T, secret string) (*clock.Fake, *store.Store, *farm.Farm, *smtptest.Server, *token.Signer) {
	t.Helper()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	st := storetest.Open(t, storetest.Options{Clock: clk})
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	smtp := smtptest.StartT(t, smtptest.Options{})
	sign, err := token.NewSigner([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return clk, st, fm, smtp, sign
}

// newStack starts one installation on a fake clock: a store, a feed farm,
// an SMTP server, the web pages on a loopback port and the workers.
func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackLimits(t, nil)
}

// newStackLimits is newStack with the web server's rate limits and proof
// of work set to lim (nil: the defaults).
func newStackLimits(t *testing.T, lim *web.Limits) *stack {
	t.Helper()
	clk, st, fm, smtp, sign := newParts(t, "e2e-secret-e2e-secret-e2e-secret")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := config.Config{BaseURL: base, From: "feedmail@feedmail.test", TrialCredits: 500, AllowPrivateNetworks: true}
	lk := links.New(base, sign, cfg.From)
	srv := web.New(web.Deps{Store: st, Config: cfg, Clock: clk, Tokens: sign, Limits: lim})
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	w := newWorkers(t, clk, st, smtp, lk, cfg.From, "e2e")
	srv.SetBaseline(newPoller(t, clk, st, lk, "e2e-web"))
	return &stack{t: t, clk: clk, st: st, farm: fm, smtp: smtp, base: base, links: lk, poller: w.poller, outbox: w.outbox, digest: w.digest}
}

// workers are the poller, outbox (with the digest renderer) and digest
// workers of one installation.
type workers struct {
	poller *poller.Poller
	outbox *outbox.Outbox
	digest *digest.Worker
}

// newWorkers builds the workers on st and clk, mailing from from over
// SMTP to smtp with links lk (whose base the poller is told); their lease owners are prefix+"-poller", "-mailer" and
// "-digest". The poller and the transport close at cleanup.
func newWorkers(t *testing.T, clk *clock.Fake, st *store.Store, smtp *smtptest.Server, lk links.Links, from, prefix string) workers {
	t.Helper()
	smtpCfg, err := mailer.ParseSMTPURL(smtp.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewSMTP(smtpCfg, mailer.WithClock(clk))
	t.Cleanup(func() { _ = tr.Close() })
	sender := mailer.Sender{Address: from}
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{Store: st, Transport: tr, Sender: sender, Links: lk, Clock: clk,
		Owner: prefix + "-mailer", Renderers: map[string]outbox.Renderer{
			store.KindDigest: outbox.NewDigestRenderer(outbox.DigestRenderConfig{Store: st, Sender: sender, Links: lk, Clock: clk}),
		}})
	if err != nil {
		t.Fatal(err)
	}
	pl := newPoller(t, clk, st, lk, prefix+"-poller")
	dw, err := digest.NewWorker(digest.Config{Store: st, Owner: prefix + "-digest", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return workers{poller: pl, outbox: ob, digest: dw}
}

// newPoller is a poller of its own (a process's) on st, owner its lease
// owner, closed at cleanup.
func newPoller(t *testing.T, clk *clock.Fake, st *store.Store, lk links.Links, owner string) *poller.Poller {
	t.Helper()
	pl, err := poller.New(poller.Config{Store: st, Fetch: fetcher.Config{BaseURL: lk.Base, AllowPrivate: true},
		Clock: clk, Owner: owner, Links: &lk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pl.Close)
	return pl
}

// deliver sends what is due and waits until the SMTP server holds n
// messages; it returns the newest.
func (s *stack) deliver(ctx context.Context, n int) smtptest.Message {
	s.t.Helper()
	if _, err := s.outbox.SendDue(ctx); err != nil {
		s.t.Fatalf("mailer: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := s.smtp.WaitFor(wctx, n); err != nil {
		s.t.Fatal(err)
	}
	msgs := s.smtp.Messages()
	return msgs[len(msgs)-1]
}

// poll polls a feed now and fails the test on an error.
func (s *stack) poll(ctx context.Context, feedURL string) {
	s.t.Helper()
	f, err := s.st.FeedByURL(ctx, feedURL)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.poller.PollFeed(ctx, f.ID, "e2e"); err != nil {
		s.t.Fatalf("poll %s: %v", feedURL, err)
	}
}

// linkIn finds the first URL under base with the given path prefix.
func linkIn(t *testing.T, s, base, prefix string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(base+prefix) + `[A-Za-z0-9_-]+`)
	l := re.FindString(s)
	if l == "" {
		t.Fatalf("no %s link in:\n%s", prefix, s)
	}
	return l
}

// shot saves a full-page PNG screenshot under artifacts/.
func shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		b, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		if err := os.MkdirAll("artifacts", 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("artifacts", name), b, 0o644)
	})
}

// startBrowser starts headless Chromium (stopped at cleanup) and returns
// its context, bounded to 3 minutes, and run, which does actions in it
// and fails the test on an error naming what.
func startBrowser(t *testing.T, chrome string) (context.Context, func(what string, actions ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	// The first Run starts the browser and binds it to its context: no
	// timeout there, only on what follows.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	bctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancelT)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return bctx, run
}

// showEmail writes an email's HTML part to artifacts/ and opens it.
func showEmail(t *testing.T, name, html string) chromedp.Action[chromedp.Void] {
	t.Helper()
	if err := os.MkdirAll("artifacts", 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join("artifacts", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return chromedp.Navigate("file://" + p)
}

func TestBrowserSignupConfirmAccountUnsubscribe(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	ctx := context.Background()

	gazette := s.farm.AddFeed(farm.Spec{Title: "The Farm Gazette", ItemCount: 3, ETag: farm.ETagStrong, LastModified: true,
		CacheControl: "max-age=900"})
	comments := s.farm.AddFeed(farm.Spec{Title: "Gazette comments", Format: farm.Atom, ItemCount: 2})
	site := s.farm.AddSite(gazette, comments)

	bctx, run := startBrowser(t, chrome)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	var body string

	// 1. Sign up with the site's address; the site has two feeds.
	run("signup", chromedp.EmulateViewport(1100, 900),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), "reader@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#url`), site),
		shot("01-signup.png"),
		chromedp.Click(chromedp.CSS(`form[action="/subscriptions"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=url][type=radio]`)),
		shot("02-pick-feed.png"),
	)
	if h1 := text("h1"); h1 != "This site has several feeds" {
		t.Fatalf("after submitting a site: %q", h1)
	}

	run("pick", chromedp.Click(chromedp.CSS(`#url-0`)),
		chromedp.Click(chromedp.CSS(`form[action="/subscriptions"] button[type=submit]`)),
		chromedp.WaitVisible(`//h1[text()="Check your inbox"]`),
		shot("03-check-inbox.png"),
	)

	// 2. The confirmation email, through the mailer and SMTP.
	msg := s.deliver(ctx, 1)
	confirmText, _ := testutil.MailParts(t, msg.Raw)
	confirm := linkIn(t, confirmText, s.base, "/confirm/")

	// 3. Confirm in the browser, land on the account page.
	run("confirm", chromedp.Navigate(confirm),
		chromedp.WaitVisible(`//button[text()="Confirm"]`),
		shot("04-confirm.png"),
		chromedp.Click(`//button[text()="Confirm"]`),
		chromedp.WaitVisible(`//h1[text()="You are subscribed"]`),
		chromedp.Click(`//a[text()="Open your account"]`),
		chromedp.WaitVisible(`//h1[text()="Your feedmail"]`),
	)
	body = text("#subscriptions")
	if !strings.Contains(body, "The Farm Gazette") || !strings.Contains(body, "Active") {
		t.Fatalf("account page does not list the subscription:\n%s", body)
	}
	// The form's "send me the newest post now" was ticked: it arrives now.
	if newest := s.deliver(ctx, 2); newest.Header.Get("Subject") == "" || strings.HasPrefix(newest.Header.Get("Subject"), "Confirm") {
		t.Fatalf("after confirming, the email is %q, want the feed's newest post", newest.Header.Get("Subject"))
	}
	u, err := s.st.UserByEmail(ctx, "reader@example.com")
	if err != nil || u.Balance != 499 {
		t.Fatalf("user %+v %v; want 500 trial credits less the newest post", u, err)
	}

	// 4. A digest of two more feeds, so the account page shows one too.
	sched, err := digest.ParseSchedule("daily", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	dg, err := s.st.SetDigest(ctx, u.ID, "Morning", sched)
	if err != nil {
		t.Fatal(err)
	}
	var digestFeeds []*farm.Feed
	for _, title := range []string{"Allotment Weekly", "Seed Catalogue Notes"} {
		f := s.farm.AddFeed(farm.Spec{Title: title, ItemCount: 3})
		feed, _, err := s.st.EnsureFeed(ctx, f.URL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.st.Subscribe(ctx, u.ID, feed.ID, &dg.ID, true); err != nil {
			t.Fatal(err)
		}
		digestFeeds = append(digestFeeds, f)
	}

	// 5. Polls: the first records what is there; then new posts arrive.
	s.poll(ctx, gazette.URL())
	for _, f := range digestFeeds {
		s.poll(ctx, f.URL())
	}
	s.clk.Advance(20 * time.Minute)
	gazette.Publish(farm.Item{Title: "Prize marrow breaks county record", Content: "<p>The marrow weighed in at <b>61 kg</b>.</p><p>Judges were impressed.</p>"})
	for i, f := range digestFeeds {
		f.Publish(farm.Item{Title: fmt.Sprintf("Planting guide, part %d", i+1), Content: "<p>Beans go in after the last frost.</p>"},
			farm.Item{Title: fmt.Sprintf("Tool review %d", i+1), Content: "<p>A good spade lasts decades.</p>"})
	}
	s.poll(ctx, gazette.URL())
	for _, f := range digestFeeds {
		s.poll(ctx, f.URL())
	}
	item := s.deliver(ctx, 3)
	if !strings.Contains(item.Header.Get("Subject"), "Prize marrow") {
		t.Fatalf("instant email subject %q", item.Header.Get("Subject"))
	}
	itemText, itemHTML := testutil.MailParts(t, item.Raw)
	unsubscribe := linkIn(t, itemText, s.base, "/unsubscribe/")
	if lu := item.Header.Get("List-Unsubscribe"); !strings.Contains(lu, unsubscribe) || item.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q", lu)
	}

	// 6. The digest slot comes (07:00 Berlin): one issue with both feeds.
	s.clk.Set(dg.NextSlotAt.Add(time.Second))
	if _, err := s.digest.AssembleDue(ctx); err != nil {
		t.Fatal(err)
	}
	dmsg := s.deliver(ctx, 4)
	_, digestHTML := testutil.MailParts(t, dmsg.Raw)
	if !strings.Contains(digestHTML, "Allotment Weekly") || !strings.Contains(digestHTML, "Seed Catalogue Notes") {
		t.Fatalf("digest email lacks its feeds")
	}

	// 7. Account page (with the digest), status page, the two emails.
	account := s.links.Account(u.ID, s.clk.Now())
	run("pages",
		chromedp.Navigate(account),
		chromedp.WaitVisible(chromedp.CSS(`#digests`)),
		shot("05-account.png"),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			var err error
			body, err = chromedp.Text(chromedp.CSS(`main`))(ctx, t)
			return err
		}),
		chromedp.Navigate(s.links.Status(gazette.URL())),
		chromedp.WaitVisible(chromedp.CSS(`table`)),
		shot("06-status.png"),
		// A feed feedmail knows: its signup page says what it would cost.
		chromedp.Navigate(s.base+"/subscribe?url="+url.QueryEscape(gazette.URL())),
		chromedp.WaitVisible(`//p[@id="forecast" and contains(., "posts a month")]`),
		chromedp.WaitVisible(`//strong[@class="forecast" and contains(., "credits a month")]`),
		shot("15-signup-forecast.png"),
		chromedp.EmulateViewport(720, 900),
		showEmail(t, "instant-email.html", itemHTML),
		chromedp.WaitVisible(chromedp.CSS(`body`)),
		shot("07-instant-email.png"),
		showEmail(t, "digest-email.html", digestHTML),
		chromedp.WaitVisible(chromedp.CSS(`body`)),
		shot("08-digest-email.png"),
	)
	u, _ = s.st.UserByID(ctx, u.ID)
	if u.Balance != 497 { // 500 trial − the newest post − 1 instant email − 1 digest issue of 2 feeds
		t.Errorf("balance %d, want 497", u.Balance)
	}
	for _, want := range []string{"The Farm Gazette", "Allotment Weekly", "Morning", "497 credits"} {
		if !strings.Contains(body, want) {
			t.Errorf("account page lacks %q", want)
		}
	}

	// 7b. The status page and the account page (with its ledger) at a
	// desktop and a phone width: no table is wider than its box, so no
	// column is cut off behind a scroll bar.
	for _, w := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"1280", 1280, 900, false}, {"375", 375, 812, true}} {
		viewport := chromedp.EmulateViewport(w.width, w.height)
		if w.mobile {
			viewport = chromedp.EmulateViewport(w.width, w.height, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		for _, pg := range []struct{ name, url string }{
			{"status", s.links.Status(gazette.URL())}, {"account", account},
		} {
			var overflow []string
			run(pg.name+" at "+w.name, viewport,
				chromedp.Navigate(pg.url),
				chromedp.WaitVisible(chromedp.CSS(`table`)),
				shot(fmt.Sprintf("11-%s-%s.png", pg.name, w.name)),
				chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					var err error
					overflow, err = chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.table-scroll, main')).filter(e => e.scrollWidth > e.clientWidth + 1).map(e => (e.getAttribute('aria-labelledby') || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth)`)(ctx, t)
					return err
				}),
			)
			if len(overflow) > 0 {
				t.Errorf("%s page at %s px: wider than its box: %v", pg.name, w.name, overflow)
			}
		}
	}

	// 7c. Filters and format of the gazette on the account page.
	var gazetteSub int64
	views, err := s.st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.FeedURL == gazette.URL() {
			gazetteSub = v.ID
		}
	}
	checkAccountSettings(t, bctx, run, s.st, account, gazetteSub)

	// 8. Unsubscribe from the link in the delivered email.
	run("unsubscribe", chromedp.EmulateViewport(1100, 900),
		chromedp.Navigate(unsubscribe),
		chromedp.WaitVisible(`//button[text()="Unsubscribe"]`),
		chromedp.Click(`//button[text()="Unsubscribe"]`),
		chromedp.WaitVisible(`//h1[text()="You are unsubscribed"]`),
		shot("09-unsubscribed.png"),
	)
	subs, err := s.st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		if sub.FeedURL == gazette.URL() {
			t.Fatalf("still subscribed after unsubscribing: %+v", sub)
		}
	}
	if len(subs) != 2 {
		t.Fatalf("the digest's subscriptions should remain: %+v", subs)
	}

	// 9. A phone: an inline error keeps what was typed.
	run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(s.base+"/subscribe?url="+url.QueryEscape(s.farm.AddSite())),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), "reader@example"),
		chromedp.Click(chromedp.CSS(`form[action="/subscriptions"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#email-error`)),
		shot("10-signup-phone.png"),
	)
	body = text("main")
	if !strings.Contains(body, "not a valid email address") || !strings.Contains(body, "that page has no feed") {
		t.Fatalf("phone signup errors:\n%s", body)
	}
}
