package security

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/feedmail/feedmail/internal/token"
)

// pageForm is one <form method="post"> found on a page.
type pageForm struct {
	page, action string
	fields       url.Values
}

// postForms reads the POST forms of an HTML page with their default field
// values (the first option of each select).
func postForms(page, doc string) []pageForm {
	var out []pageForm
	var cur *pageForm
	inSelect := ""
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		tok := z.Token()
		attr := func(k string) string {
			for _, a := range tok.Attr {
				if a.Key == k {
					return a.Val
				}
			}
			return ""
		}
		switch {
		case tt == html.StartTagToken && tok.Data == "form":
			if strings.EqualFold(attr("method"), "post") {
				action := attr("action")
				if action == "" {
					action = page
				}
				cur = &pageForm{page: page, action: action, fields: url.Values{}}
			}
		case tt == html.EndTagToken && tok.Data == "form":
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case cur != nil && (tt == html.StartTagToken || tt == html.SelfClosingTagToken) && (tok.Data == "input" || tok.Data == "textarea"):
			if n := attr("name"); n != "" && attr("type") != "file" && !cur.fields.Has(n) {
				cur.fields.Set(n, attr("value"))
			}
		case cur != nil && tt == html.StartTagToken && tok.Data == "select":
			inSelect = attr("name")
		case cur != nil && tt == html.StartTagToken && tok.Data == "option" && inSelect != "":
			if !cur.fields.Has(inSelect) {
				cur.fields.Set(inSelect, attr("value"))
			}
		case tt == html.EndTagToken && tok.Data == "select":
			inSelect = ""
		}
	}
}

// crossOriginExempt are the POST endpoints that other machines call; they
// are authorised by a token, a signature or are harmless (web/middleware.go).
var crossOriginExempt = []string{"/unsubscribe/", "/webhooks/", "/websub/", "/ping", "/RPC2"}

func exempt(action string) bool {
	for _, p := range crossOriginExempt {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// TestEveryFormRefusesCrossSitePosts finds every POST form on every page
// feedmail serves (signup, sign-in, the prefilled subscribe page, confirm,
// the account page with its per-subscription and digest forms, OPML import,
// credits, unsubscribe), and sends each one as a cross-site request in the
// three ways browsers mark one (Sec-Fetch-Site: cross-site, same-site, and
// an Origin of another site without Fetch metadata). Every form but the
// documented machine endpoints answers 403 and changes nothing; the same
// form sent same-origin is not refused. It also checks that a form was found
// for each protected route, so a form added later is covered automatically
// and a form that goes missing is noticed.
func TestEveryFormRefusesCrossSitePosts(t *testing.T) {
	e := newEnv(t, envOpt{})
	f, _, err := e.st.EnsureFeed(e.ctx, "https://csrf.example/feed.xml")
	if err != nil {
		t.Fatal(err)
	}
	a, sub := e.reader("a@example.net", f.ID, "Evening")
	pending, err := e.st.Subscribe(e.ctx, a.ID, mustFeed(t, e, "https://pending.example/feed.xml"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	acc := e.sign.SignIssued(token.Account, a.ID, now, now.Add(time.Hour))
	pages := []string{
		"/", "/signin", "/subscribe?url=" + url.QueryEscape(f.URL),
		"/confirm/" + e.sign.Sign(token.Confirm, pending.ID, now.Add(time.Hour)),
		"/account/" + acc, "/credits?token=" + acc, "/credits",
		"/unsubscribe/" + e.sign.Sign(token.Unsubscribe, sub.ID, time.Time{}),
	}
	var forms []pageForm
	for _, p := range pages {
		w := e.request("GET", p, nil, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, w.Code)
		}
		forms = append(forms, postForms(p, w.Body.String())...)
	}
	// Each protected route must have been found on some page.
	wantRoutes := map[string]bool{
		"/subscriptions": false, "/signin": false, "/confirm/": false, "/credits/checkout": false,
		"/subscriptions/%d/delivery": false, "/subscriptions/%d/unsubscribe": false, "/subscriptions/%d/confirm": false,
		"/digests": false, "/opml": false,
	}
	for _, fm := range forms {
		for r := range wantRoutes {
			if strings.Contains(r, "%d") {
				if strings.HasPrefix(fm.action, "/account/") && strings.HasSuffix(fm.action, r[strings.LastIndex(r, "/"):]) &&
					strings.Contains(fm.action, "/subscriptions/") {
					wantRoutes[r] = true
				}
			} else if strings.HasPrefix(fm.action, r) || strings.HasSuffix(fm.action, r) {
				wantRoutes[r] = true
			}
		}
	}
	var missing []string
	for r, found := range wantRoutes {
		if !found {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no form found for %v (on %v)", missing, pages)
	}

	crossSite := []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://sub.feedmail.test"},
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
	}
	before := e.snapshot()
	for _, fm := range forms {
		for _, h := range crossSite {
			t.Run(fm.page+" → "+fm.action+" "+h["Sec-Fetch-Site"]+" "+h["Origin"], func(t *testing.T) {
				w := e.request("POST", fm.action, fm.fields, h)
				switch {
				case exempt(fm.action):
					if w.Code == http.StatusForbidden {
						t.Errorf("machine endpoint refused a cross-site POST")
					}
				case w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "another site"):
					t.Errorf("%d, want 403\n%.300s", w.Code, w.Body.String())
				}
			})
		}
	}
	after := e.snapshot()
	// The exempt one-click unsubscribe is meant to work cross-site: it may
	// have ended the subscription. Nothing else may have changed.
	after.subs = strings.Replace(after.subs, ":ended:", ":active:", -1)
	if before.digests != after.digests || before.outbox != after.outbox || before.ledger != after.ledger ||
		before.purchase != after.purchase || before.subs != after.subs {
		t.Fatalf("cross-site posts changed the database:\n before %+v\n after  %+v", before, after)
	}

	// Controls: the same forms from our own pages are not refused.
	for _, fm := range forms {
		if exempt(fm.action) {
			continue
		}
		w := e.request("POST", fm.action, fm.fields, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": baseURL})
		if w.Code == http.StatusForbidden {
			t.Errorf("same-origin POST %s refused", fm.action)
		}
	}
}
