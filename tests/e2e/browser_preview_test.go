package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/web"
)

// frameChange runs js in the page of bctx (it changes a choice of the
// signup form), waits until the preview frame has loaded what the change
// asked for and returns the frame's address.
func frameChange(t *testing.T, bctx context.Context, js string) string {
	t.Helper()
	expr := `new Promise((resolve) => {
		const frame = document.querySelector('#preview iframe');
		frame.addEventListener('load', () => resolve(frame.getAttribute('src')), {once: true});
		` + js + `
	})`
	src, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("change %s: %v", js, err)
	}
	return src
}

// attr returns an attribute of the first element sel matches.
func attr(t *testing.T, bctx context.Context, sel, name string) string {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil || !v.Exists {
		t.Fatalf("%s[%s]: %+v, %v", sel, name, v, err)
	}
	return v.Value
}

// eval evaluates a script in the page of bctx and returns its string.
func eval(t *testing.T, bctx context.Context, js string) string {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// scripts turns the page's JavaScript on or off.
func scripts(on bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return err
	})
}

// subjectOf fetches a preview page as the frame does and returns its
// subject line.
func subjectOf(t *testing.T, base, src string) string {
	t.Helper()
	resp, err := http.Get(base + src)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d\n%s", src, resp.StatusCode, b)
	}
	s := string(b)
	i := strings.Index(s, `id="preview-subject">`)
	if i < 0 {
		t.Fatalf("%s has no subject:\n%s", src, s)
	}
	s = s[i+len(`id="preview-subject">`):]
	return s[:strings.IndexByte(s, '<')]
}

// TestBrowserSignupPreview: a person types a site's address into the
// signup form and, without JavaScript, presses "Preview the email": the
// form comes back with a frame of the email of the feed's newest post.
// With JavaScript, the frame follows each format and a digest choice
// (screenshots 17-preview-*.png). Nothing is created.
func TestBrowserSignupPreview(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	now := s.clk.Now()
	var items []farm.Item
	for i := 5; i >= 1; i-- {
		items = append(items, farm.Item{Title: fmt.Sprintf("Harbour report %d", i), Link: fmt.Sprintf("/posts/%d", i),
			Published: now.Add(-time.Duration(6-i) * 20 * time.Hour),
			Content:   fmt.Sprintf("<p>The boats of day %d came in at dawn, with <b>herring</b> and news from the islands.</p>", i)})
	}
	gazette := s.farm.AddFeed(farm.Spec{Title: "The Harbour Gazette", Items: items})
	site := s.farm.AddSite(gazette)
	bctx, run := startBrowser(t, chrome)

	run("no script: the preview button",
		scripts(false),
		chromedp.EmulateViewport(1100, 1400),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), "reader@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#url`), site),
		chromedp.Click(chromedp.CSS(`button[name=preview]`)),
		chromedp.WaitVisible(chromedp.CSS(`#preview iframe`)),
	)
	src := attr(t, bctx, `#preview iframe`, "src")
	if !strings.Contains(src, "format=full") || subjectOf(t, s.base, src) != "Harbour report 5" {
		t.Fatalf("without script the frame shows %q", src)
	}
	run("no script: screenshot", chromedp.ScrollIntoView(chromedp.CSS(`#preview`)), shot("17-preview-noscript.png"))

	run("script on", scripts(true),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#url`), site),
	)
	for _, c := range []struct{ format, delivery, want string }{
		{store.FormatFull, "instant", "Harbour report 5"},
		{store.FormatSummary, "instant", "Harbour report 5"},
		{store.FormatTitle, "instant", "Harbour report 5"},
		{store.FormatArticle, "instant", "Harbour report 5"},
		{store.FormatSummary, "daily", "Your Daily digest"},
	} {
		js := fmt.Sprintf(`document.querySelector('#format').value = %q;
			document.querySelector('#d-%s').checked = true;
			document.querySelector('#format').dispatchEvent(new Event('change', {bubbles: true}));`, c.format, c.delivery)
		src := frameChange(t, bctx, js)
		run("preview "+c.format+" "+c.delivery, chromedp.ScrollIntoView(chromedp.CSS(`#preview`)),
			shot("17-preview-"+c.format+"-"+c.delivery+".png"))
		if !strings.Contains(src, "format="+c.format) || !strings.Contains(src, "delivery="+c.delivery) {
			t.Errorf("%s %s: the frame shows %q", c.format, c.delivery, src)
		}
		if got := subjectOf(t, s.base, src); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s: subject %q, want %q…", c.format, c.delivery, got, c.want)
		}
	}
	sandbox := attr(t, bctx, `#preview iframe`, "sandbox")
	if strings.Contains(sandbox, "allow-scripts") || strings.Contains(sandbox, "allow-same-origin") {
		t.Errorf("the frame's sandbox is %q", sandbox)
	}
	for _, m := range []any{&store.User{}, &store.Subscription{}, &store.OutboxRow{}, &store.LedgerEntry{}, &store.Feed{}} {
		var n int64
		if err := s.st.DB.Model(m).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%T: %d rows after the previews, %v", m, n, err)
		}
	}
}

// TestBrowserPreviewBeforeProof: a person presses "Preview the email"
// while the page's proof of work is still being solved (here it never
// is: 30 bits). The preview asks for no proof, so the form is sent at
// once, as a preview: the frame shows the email and nobody is signed up.
// (The script used to hold the form until solved, then send it without
// the button pressed: a signup instead of a preview.)
func TestBrowserPreviewBeforeProof(t *testing.T) {
	chrome := chromiumPath(t)
	lim := web.DefaultLimits()
	lim.Proof.Bits = 30
	s := newStackLimits(t, &lim)
	feed := s.farm.AddFeed(farm.Spec{Title: "The Slow Proof", Items: []farm.Item{
		{Title: "Quick look", Link: "/posts/1", Content: "<p>Words.</p>", Published: s.clk.Now().Add(-time.Hour)}}})
	bctx, run := startBrowser(t, chrome)
	run("the signup page, its proof unsolved", chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)))
	// The fields are set without input or change events, so that the
	// page's own preview script stays still: only the button can bring
	// the frame.
	eval(t, bctx, fmt.Sprintf(`document.querySelector('#email').value = 'reader@example.com';
		document.querySelector('#url').value = %q; ''`, feed.URL()))
	if v := attr(t, bctx, `input[name=proof]`, "value"); v != "" {
		t.Fatalf("the 30-bit proof is solved already: %q", v)
	}
	wait, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(wait, chromedp.Click(chromedp.CSS(`button[name=preview]`)),
		chromedp.WaitVisible(chromedp.CSS(`#preview iframe[src]`))); err != nil {
		u, _ := chromedp.Run(bctx, chromedp.Location())
		t.Fatalf("pressing preview before the proof is solved: no preview frame within 90 s (%v); the page is at %s", err, u)
	}
	if src := attr(t, bctx, `#preview iframe`, "src"); subjectOf(t, s.base, src) != "Quick look" {
		t.Errorf("the frame shows %q", src)
	}
	var n int64
	if err := s.st.DB.Model(&store.User{}).Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d people signed up by a preview, %v", n, err)
	}
}

// TestBrowserPreviewRunsNoScript: a feed whose post carries scripts, an
// event handler, a form, a remote stylesheet and a frame, all aimed at a
// beacon: its preview, in the signup page's frame and opened on its own,
// runs none of it and loads nothing from the beacon.
func TestBrowserPreviewRunsNoScript(t *testing.T) {
	chrome := chromiumPath(t)
	s := newStack(t)
	var hits atomic.Int64
	var paths atomic.Value
	paths.Store("")
	beacon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		paths.Store(paths.Load().(string) + " " + r.URL.Path)
	}))
	t.Cleanup(beacon.Close)
	b := beacon.URL
	hostile := fmt.Sprintf(`<p>Innocent words.</p><script>window.ran = 1; fetch('%[1]s/script')</script>`+
		`<img src="https://example.invalid/x.png" onerror="window.ran = 2; fetch('%[1]s/onerror')">`+
		`<form action="%[1]s/form" method="post"><input name="q" value="x"><button id="go">Go</button></form>`+
		`<link rel="stylesheet" href="%[1]s/style.css"><style>@import url(%[1]s/import.css); p { background: url(%[1]s/bg.png) }</style>`+
		`<iframe src="%[1]s/frame"></iframe><svg onload="window.ran = 3"></svg><a href="javascript:window.ran=4">link</a>`+
		`<object data="%[1]s/object"></object><embed src="%[1]s/embed">`, b)
	feed := s.farm.AddFeed(farm.Spec{Title: "<script>window.ran=5</script>Hostile", Items: []farm.Item{
		{Title: `Look <script>window.ran=6</script>`, Link: "/posts/1", Content: hostile, Published: s.clk.Now().Add(-time.Hour)}}})
	bctx, run := startBrowser(t, chrome)
	run("in the signup page's frame", chromedp.EmulateViewport(1100, 1400),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#url`), feed.URL()),
		chromedp.Click(chromedp.CSS(`button[name=preview]`)),
		chromedp.WaitVisible(chromedp.CSS(`#preview iframe`)),
	)
	// The frame's own load event may have passed: wait for the page's.
	eval(t, bctx, `new Promise((resolve) => document.readyState === 'complete' ? resolve('') :
		window.addEventListener('load', () => resolve(''), {once: true}))`)
	run("screenshot", chromedp.ScrollIntoView(chromedp.CSS(`#preview`)), shot("18-preview-hostile.png"))
	if ran, title := eval(t, bctx, `String(window.ran)`), eval(t, bctx, `document.title`); ran != "undefined" || !strings.Contains(title, "feedmail") {
		t.Errorf("the signup page: window.ran = %s, title %q", ran, title)
	}
	src := attr(t, bctx, `#preview iframe`, "src")
	run("on its own", chromedp.Navigate(s.base+src), chromedp.WaitVisible(chromedp.CSS(`#preview-subject`)))
	if ran := eval(t, bctx, `String(window.ran)`); ran != "undefined" {
		t.Errorf("the preview page ran a script: window.ran = %s", ran)
	}
	if n := eval(t, bctx, `String(document.forms.length + document.querySelectorAll('script, iframe, object, embed, link[rel=stylesheet]').length)`); n != "0" {
		t.Errorf("the preview carries %s forms, scripts, frames or remote styles", n)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the beacon got %d requests:%s", n, paths.Load())
	}
}
