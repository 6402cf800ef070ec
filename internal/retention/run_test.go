package retention

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// fixture writes rows of every retained table, oldest first as serve
// writes them, and remembers which ids each table should keep.
type fixture struct {
	t    *testing.T
	st   *store.Store
	now  time.Time
	user int64
	feed int64
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if err := f.st.DB.Exec(q, args...).Error; err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

func (f *fixture) ago(days int) time.Time { return f.now.Add(-time.Duration(days) * 24 * time.Hour) }

// item writes a post seen days ago, dated pubDays before now (-1: no date).
func (f *fixture) item(identity string, seenDays, pubDays int) {
	var pub *time.Time
	if pubDays >= 0 {
		p := f.ago(pubDays)
		pub = &p
	}
	f.exec(`INSERT INTO items (feed_id, identity, content, media, published_at, seen_at) VALUES (?, ?, 'body', '', ?, ?)`,
		f.feed, identity, pub, f.ago(seenDays))
}

func (f *fixture) outbox(key, state string, days int) {
	f.exec(`INSERT INTO outbox (kind, dedupe_key, user_id, to_addr, state, next_attempt_at, created_at) VALUES ('item', ?, ?, 'r@example.com', ?, ?, ?)`,
		key, f.user, state, f.ago(days), f.ago(days))
}

func (f *fixture) ledger(key, kind string, days int) {
	f.exec(`INSERT INTO ledger_entries (user_id, kind, amount, balance_after, idempotency_key, reason, created_at) VALUES (?, ?, 1, 10, ?, ?, ?)`,
		f.user, kind, key, key, f.ago(days))
}

func (f *fixture) pollLog(reason string, days int) {
	f.exec(`INSERT INTO poll_log (feed_id, polled_at, reason) VALUES (?, ?, ?)`, f.feed, f.ago(days), reason)
}

// remaining returns what is left of a table, by its label column.
func (f *fixture) remaining(q string) []string {
	f.t.Helper()
	var out []string
	if err := f.st.DB.Raw(q).Scan(&out).Error; err != nil {
		f.t.Fatal(err)
	}
	return out
}

func TestPrunerPass(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	st := storetest.Open(t, storetest.Options{Clock: clk})
	f := &fixture{t: t, st: st, now: now}
	u, _, err := st.EnsureUser(ctx, "r@example.com")
	if err != nil {
		t.Fatal(err)
	}
	fd, _, err := st.EnsureFeed(ctx, "https://example.com/feed")
	if err != nil {
		t.Fatal(err)
	}
	f.user, f.feed = u.ID, fd.ID
	f.exec(`UPDATE feeds SET newest_item_date = ? WHERE id = ?`, f.ago(1), f.feed)

	f.item("far-behind", 200, 150)      // deleted: old and 149 days behind the newest post
	f.item("undated", 150, -1)          // content cleared, kept
	f.item("near-newest", 100, 20)      // content cleared: only 19 days behind
	f.item("young-far-behind", 10, 300) // kept whole: seen 10 days ago

	f.outbox("sent-old", store.OutboxSent, 40)
	f.outbox("failed-old", store.OutboxFailed, 40)
	f.outbox("held-old", store.OutboxHeld, 35)
	f.outbox("sent-young", store.OutboxSent, 2)
	f.outbox("sent-old-after-young", store.OutboxSent, 40) // behind a young row: a later pass's

	f.ledger("purchase-old", "purchase", 800)
	f.ledger("charge-old", "charge", 700)
	f.ledger("charge-young", "charge", 3)

	f.pollLog("old", 8)
	f.pollLog("young", 6)

	f.exec(`INSERT INTO digests (user_id, name, schedule, next_slot_at, created_at) VALUES (?, 'Daily', '0 7 * * *', ?, ?)`, f.user, now, f.ago(100))
	f.exec(`INSERT INTO subscriptions (user_id, feed_id, digest_id, state, created_at) VALUES (?, ?, (SELECT MAX(id) FROM digests), 'active', ?)`, f.user, f.feed, f.ago(100))
	f.exec(`INSERT INTO digest_issues (digest_id, slot_at, state, created_at) VALUES ((SELECT MAX(id) FROM digests), ?, 'sent', ?)`, f.ago(40), f.ago(40))
	f.exec(`INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, issue_id, queued_at)
SELECT d.id, s.id, i.id, ?, (SELECT MAX(id) FROM digest_issues), ? FROM digests d, subscriptions s, items i WHERE i.identity = 'young-far-behind'`, f.feed, f.ago(41))
	f.exec(`INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, issue_id, queued_at)
SELECT d.id, s.id, i.id, ?, NULL, ? FROM digests d, subscriptions s, items i WHERE i.identity = 'undated'`, f.feed, f.ago(40))

	f.exec(`INSERT INTO rate_limits (key, tat) VALUES ('full-again', ?), ('counting', ?)`, now.Add(-time.Second).UnixMilli(),
		now.Add(time.Minute).UnixMilli())

	p := &Pruner{St: st, Policy: Default(), Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	c, err := p.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ what, q, want string }{
		{"items", `SELECT identity || ':' || content FROM items ORDER BY id`, "[undated: near-newest: young-far-behind:body]"},
		{"outbox", `SELECT dedupe_key FROM outbox ORDER BY id`, "[held-old sent-young sent-old-after-young]"},
		{"ledger", `SELECT idempotency_key FROM ledger_entries ORDER BY id`, "[purchase-old charge-young]"},
		{"poll log", `SELECT reason FROM poll_log ORDER BY id`, "[young]"},
		{"digest items", `SELECT i.identity FROM digest_items d JOIN items i ON i.id = d.item_id ORDER BY d.id`, "[undated]"},
		{"rate limits", `SELECT key FROM rate_limits ORDER BY key`, "[counting]"},
	}
	for _, ch := range checks {
		if got := fmt.Sprint(f.remaining(ch.q)); got != ch.want {
			t.Errorf("%s after a pass: %s, want %s", ch.what, got, ch.want)
		}
	}
	if got := c[store.RetainItems]; got.Deleted != 1 || got.Cleared != 2 {
		t.Errorf("items: deleted %d cleared %d, want 1 and 2", got.Deleted, got.Cleared)
	}

	// A second pass reads nothing it judged already; a restart judges the
	// kept rows again and finds nothing more to do.
	c, err = p.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range Tables {
		if c[tb].Read != 0 {
			t.Errorf("second pass read %d rows of %s again", c[tb].Read, tb)
		}
	}
	p.Restart()
	if c, err = p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tb := range Tables {
		if c[tb].Deleted != 0 || c[tb].Cleared != 0 {
			t.Errorf("restarted pass changed %s: %+v", tb, c[tb])
		}
	}
}
