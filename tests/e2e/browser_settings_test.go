package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/feedmail/feedmail/internal/store"
)

// checkAccountSettings sets the filters and format of subscription sub on
// the account page, in the browser of bctx: a bad regular expression
// shows its problem next to the form and changes nothing; good settings
// are saved, shown again on a fresh load, and stored. It saves
// 12-settings-error.png and 13-settings-saved.png.
func checkAccountSettings(t *testing.T, bctx context.Context, run func(string, ...chromedp.Action[chromedp.Void]),
	st *store.Store, account string, sub int64) {
	t.Helper()
	id := func(prefix string) string { return fmt.Sprintf("#%s-%d", prefix, sub) }
	summary := fmt.Sprintf(`//form[@id="settings-%d"]/../summary`, sub)
	submit := fmt.Sprintf(`#settings-%d button[type=submit]`, sub)
	value := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Value(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("value of %s: %v", sel, err)
		}
		return v
	}

	run("settings: a bad regular expression", chromedp.EmulateViewport(1100, 900),
		chromedp.Navigate(account),
		chromedp.WaitVisible(chromedp.CSS(`#subscriptions`)),
		chromedp.Click(summary),
		chromedp.WaitVisible(chromedp.CSS(id("st-include"))),
		chromedp.SendKeys(chromedp.CSS(id("st-include")), "/(/"),
		chromedp.Click(chromedp.CSS(submit)),
		chromedp.WaitVisible(chromedp.CSS(id("st")+"-error")),
		shot("12-settings-error.png"),
	)
	msg, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(id("st")+"-error")))
	if err != nil || !strings.Contains(msg, "invalid regular expression /(/: missing closing )") {
		t.Fatalf("settings error %q, %v", msg, err)
	}
	if v := value(id("st-include")); v != "/(/" {
		t.Errorf("the form lost what was typed: %q", v)
	}
	got, err := st.SubscriptionByID(context.Background(), sub)
	if err != nil || got.IncludeTerms != "" || got.Format != store.FormatFull {
		t.Fatalf("a bad setting was stored: %+v, %v", got, err)
	}

	run("settings: saved",
		chromedp.SetValue(chromedp.CSS(id("st-include")), "marrow, county record"),
		chromedp.SendKeys(chromedp.CSS(id("st-exclude")), "sponsored"),
		chromedp.SetValue(chromedp.CSS(id("st-format")), store.FormatTitle),
		chromedp.Click(chromedp.CSS(submit)),
		chromedp.WaitVisible(`//p[@class="flash" and text()="Filters and format saved."]`),
		chromedp.Navigate(account),
		chromedp.WaitVisible(chromedp.CSS(`#subscriptions`)),
		chromedp.Click(summary),
		chromedp.WaitVisible(chromedp.CSS(id("st-include"))),
		chromedp.ScrollIntoView(chromedp.CSS(id("st-format"))),
		shot("13-settings-saved.png"),
	)
	if inc, exc, f := value(id("st-include")), value(id("st-exclude")), value(id("st-format")); inc != "marrow, county record" ||
		exc != "sponsored" || f != store.FormatTitle {
		t.Errorf("after a reload the form shows %q %q %q", inc, exc, f)
	}
	got, err = st.SubscriptionByID(context.Background(), sub)
	if err != nil || got.IncludeTerms != "marrow, county record" || got.ExcludeTerms != "sponsored" || got.Format != store.FormatTitle {
		t.Fatalf("stored settings %+v, %v", got, err)
	}
}
