package subscribe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestImportOPMLOptions checks what follows an import under each option:
// the subscriptions' state, the trial, the bouncing mark and the email
// asking to confirm. The account page sets Confirmed; the command sets
// KeepBouncing and StopOnError, and Confirmed with --confirmed.
func TestImportOPMLOptions(t *testing.T) {
	cases := []struct {
		name         string
		opt          ImportOptions
		wantState    string
		wantBalance  int64
		wantBouncing bool
		wantNotice   bool
	}{
		{name: "account page", opt: ImportOptions{Confirmed: true}, wantState: store.SubActive, wantBalance: 500},
		{name: "command --confirmed", opt: ImportOptions{Confirmed: true, KeepBouncing: true, StopOnError: true},
			wantState: store.SubActive, wantBalance: 500, wantBouncing: true},
		{name: "command", opt: ImportOptions{KeepBouncing: true, StopOnError: true},
			wantState: store.SubPending, wantBouncing: true, wantNotice: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := newService(t)
			fm := farm.New(svc.Clock)
			t.Cleanup(fm.Close)
			svc.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 5 * time.Second})
			ctx := context.Background()
			good := fm.AddFeed(farm.Spec{Title: "Good", ItemCount: 1})
			u, _, err := svc.Store.EnsureUser(ctx, "a@example.com")
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Store.DB.Exec(`UPDATE users SET bouncing_since = ? WHERE id = ?`, svc.Clock.Now(), u.ID).Error; err != nil {
				t.Fatal(err)
			}
			outlines := []opml.Outline{{XMLURL: good.URL()}, {XMLURL: good.URL()}, {XMLURL: "not a url"}}
			rep, err := svc.ImportOPML(ctx, u, outlines, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Added) != 1 || len(rep.Already) != 1 || len(rep.Failed) != 1 || rep.Added[0].Title != "Good" {
				t.Fatalf("report %+v", rep)
			}
			subs, err := svc.Store.SubscriptionsOfUser(ctx, u.ID)
			if err != nil || len(subs) != 1 || subs[0].State != c.wantState {
				t.Fatalf("subscriptions %+v, %v; want one %s", subs, err, c.wantState)
			}
			u, err = svc.Store.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if u.Balance != c.wantBalance || (u.BouncingSince != nil) != c.wantBouncing {
				t.Errorf("balance %d bouncing %v, want %d %v", u.Balance, u.BouncingSince, c.wantBalance, c.wantBouncing)
			}
			ns := noticeSubjects(t, svc.Store)
			sent := len(ns) == 1 && strings.HasPrefix(ns[0], "Confirm the feeds imported")
			if sent != c.wantNotice || (!c.wantNotice && len(ns) > 0) {
				t.Errorf("notices %q", ns)
			}
		})
	}
}

// TestImportFindsTheFeedAndKeepsFolders: an outline whose address is a
// site's page is imported as the feed the page advertises, in the
// outline's folder, and the export gives back the folder and each feed's
// site (htmlUrl).
func TestImportFindsTheFeedAndKeepsFolders(t *testing.T) {
	svc := newService(t)
	fm := farm.New(svc.Clock)
	t.Cleanup(fm.Close)
	svc.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	ctx := context.Background()
	blog := fm.AddFeed(farm.Spec{Title: "Go Blog", ItemCount: 1})
	other := fm.AddFeed(farm.Spec{Title: "Other", ItemCount: 1})
	site := fm.AddSite(blog)
	u, _, err := svc.Store.EnsureUser(ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := svc.ImportOPML(ctx, u, []opml.Outline{
		{XMLURL: site, Title: "Go Blog (site)", Folder: "Tech / Go"},
		{XMLURL: other.URL(), Title: "Other"},
	}, ImportOptions{Confirmed: true})
	if err != nil || len(rep.Added) != 2 || len(rep.Failed) != 0 || rep.Added[0].URL != blog.URL() {
		t.Fatalf("report %+v, %v; want both added, the site as its feed %s", rep, err, blog.URL())
	}
	var out strings.Builder
	if err := ExportOPML(ctx, svc.Store, u, &out); err != nil {
		t.Fatal(err)
	}
	back, err := opml.Parse(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	byURL := map[string]opml.Outline{}
	for _, o := range back {
		byURL[o.XMLURL] = o
	}
	if g := byURL[blog.URL()]; g.Folder != "Tech / Go" || g.HTMLURL == "" {
		t.Errorf("exported %+v; want the folder Tech / Go and the site's address\n%s", g, out.String())
	}
	if o := byURL[other.URL()]; o.Folder != "" || o.HTMLURL == "" {
		t.Errorf("exported %+v; want the top level and the site's address", o)
	}
}
