package lowbalance

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestNewAccountWarnedBeforeRunningOut: a new account subscribes to a
// feed posting three times a day whose posts feedmail has not recorded
// yet (no history to read: the signup's document was not kept, the first
// poll is still to come). The signup page showed its cost; the line is two
// weeks of that, so the reader, whose trial lasts less, is told they run
// low at the first pass instead of hearing only that they ran out.
func TestNewAccountWarnedBeforeRunningOut(t *testing.T) {
	clk := clock.NewFake(t0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fm := farm.New(clk)
	t.Cleanup(fm.Close)
	f := fm.AddFeed(farm.Spec{Title: "Busy", ItemCount: 20, ItemInterval: 8 * time.Hour})
	svc := &subscribe.Service{Store: s, Clock: clk, Log: quiet(), TrialCredits: 30,
		Fetch: fetcher.New(fetcher.Config{BaseURL: "https://fm.example", AllowPrivate: true})}
	ctx := context.Background()
	found, err := svc.FindTyped(ctx, f.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := found.Forecast.Instant
	if found.Forecast.NotEnoughHistory || shown.Credits < 80 {
		t.Fatalf("signup forecast %+v: want about 90 credits a month", found.Forecast)
	}
	res, err := svc.Subscribe(ctx, subscribe.Request{Email: "new@example.net", Feed: found, Confirmed: true})
	if err != nil {
		t.Fatal(err)
	}
	if dates, err := s.ItemDates(ctx, res.Sub.FeedID, 0); err != nil || len(dates) != 0 {
		t.Fatalf("stored dates %v, %v: want none (no history yet)", dates, err)
	}
	r := &reader{t: t, s: s, clk: clk, u: res.User}
	p := r.pass()
	if n, err := p.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("pass computed %d lines (%v), want 1", n, err)
	}
	u := r.user()
	want := billing.LowLine(Rate{PerMonth: shown.Expected}.PerDay())
	if u.Balance != 30 || u.LowLine != want {
		t.Fatalf("balance %d, line %d: want 30 and about %d (two weeks of the %.1f credits a month shown at signup)",
			u.Balance, u.LowLine, want, shown.Expected)
	}
	if n := r.count("kind = ? AND dedupe_key LIKE ?", store.KindNotice, "lowcredits:%"); n != 1 || u.LowNoticeAt == nil {
		t.Fatalf("%d running-low notices queued (warned at %v), want 1 at once: 30 credits last less than two weeks", n, u.LowNoticeAt)
	}
	// Once the posts are recorded, they decide; until then the line is
	// looked at again the next day.
	if d := u.LowLineDue.Sub(t0); d > 24*time.Hour {
		t.Errorf("line due again after %v, want within a day while the history is unknown", d)
	}
}
