package retention

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

func TestDecide(t *testing.T) {
	day := 24 * time.Hour
	newest := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := newest.Add(-d); return &v }
	p := Default()
	cases := []struct {
		name  string
		table store.RetainedTable
		row   store.RetainedRow
		want  Action
	}{
		{"sent email", store.RetainOutbox, store.RetainedRow{State: store.OutboxSent}, Delete},
		{"failed email", store.RetainOutbox, store.RetainedRow{State: store.OutboxFailed}, Delete},
		{"expired email", store.RetainOutbox, store.RetainedRow{State: store.OutboxExpired}, Delete},
		{"queued email", store.RetainOutbox, store.RetainedRow{State: store.OutboxQueued}, Keep},
		{"held email", store.RetainOutbox, store.RetainedRow{State: store.OutboxHeld}, Keep},
		{"post far behind its feed", store.RetainItems, store.RetainedRow{Published: at(31 * day), Newest: &newest, HasContent: true}, Delete},
		{"post 30 days behind: content only", store.RetainItems, store.RetainedRow{Published: at(30 * day), Newest: &newest, HasContent: true}, ClearContent},
		{"undated post: content only", store.RetainItems, store.RetainedRow{Newest: &newest, HasContent: true}, ClearContent},
		{"feed without dates: content only", store.RetainItems, store.RetainedRow{Published: at(400 * day), HasContent: true}, ClearContent},
		{"undated post already cleared", store.RetainItems, store.RetainedRow{Newest: &newest}, Keep},
		{"charge with a newer entry", store.RetainLedger, store.RetainedRow{State: "charge", Superseded: true}, Delete},
		{"refund with a newer entry", store.RetainLedger, store.RetainedRow{State: "refund", Superseded: true}, Delete},
		{"account's newest entry", store.RetainLedger, store.RetainedRow{State: "charge"}, Keep},
		{"purchase", store.RetainLedger, store.RetainedRow{State: "purchase", Superseded: true}, Keep},
		{"grant", store.RetainLedger, store.RetainedRow{State: "grant", Superseded: true}, Keep},
		{"adjustment", store.RetainLedger, store.RetainedRow{State: "adjustment", Superseded: true}, Keep},
		{"poll log line", store.RetainPollLog, store.RetainedRow{}, Delete},
		{"issued digest entry", store.RetainDigestItems, store.RetainedRow{Superseded: true}, Delete},
		{"pending digest entry", store.RetainDigestItems, store.RetainedRow{}, Keep},
	}
	for _, c := range cases {
		if got := p.Decide(c.table, c.row); got != c.want {
			t.Errorf("%s: Decide = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestForgottenPostsStayIgnored holds the rule that makes deleting a post
// safe: a post Decide deletes is one the ignore rules skip if its feed
// lists it again, so forgetting it never sends it twice.
func TestForgottenPostsStayIgnored(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for _, behind := range []time.Duration{ItemBehindKeep + time.Second, 60 * 24 * time.Hour, 2 * 365 * 24 * time.Hour} {
		newest := now.Add(-time.Hour)
		pub := newest.Add(-behind)
		row := store.RetainedRow{Published: &pub, Newest: &newest, HasContent: true}
		if Default().Decide(store.RetainItems, row) != Delete {
			t.Fatalf("a post %v behind its feed's newest is not deleted", behind)
		}
		it := newitems.Item{Published: pub}
		v := newitems.Select([]newitems.Item{it}, []newitems.Item{it}, newest, now)
		if v[0].Deliver() {
			t.Errorf("a forgotten post %v behind its feed's newest would be delivered again", behind)
		}
	}
	if ItemBehindKeep <= newitems.MaxBehindSeen {
		t.Errorf("ItemBehind %v must exceed the ignore rule's %v", ItemBehindKeep, newitems.MaxBehindSeen)
	}
}

func TestOld(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	p := Default()
	if p.Old(store.RetainOutbox, store.RetainedRow{At: now.Add(-p.Outbox)}, now) {
		t.Error("a row exactly at its keep is old")
	}
	if !p.Old(store.RetainOutbox, store.RetainedRow{At: now.Add(-p.Outbox - time.Second)}, now) {
		t.Error("a row past its keep is not old")
	}
	if (Policy{}).Old(store.RetainPollLog, store.RetainedRow{At: now.Add(-1000 * time.Hour)}, now) {
		t.Error("a zero keep prunes")
	}
}
