package digest_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// seedBench fills a fresh Postgres schema with nDigests people, each with
// one digest due at slot, 8 feeds (from a pool of 800) delivered into it
// and 20 items waiting (3 from four feeds, 2 from the other four) — what
// the poller's pipeline would have queued. Set-based SQL, so seeding
// 200,000 digest items takes seconds.
func seedBench(tb testing.TB, st *store.Store, nDigests int, slot time.Time) {
	tb.Helper()
	now := slot.Add(-time.Hour)
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO users (email, timezone, balance, created_at)
SELECT 'u' || g || '@example.com', 'UTC', 1000, ? FROM generate_series(1, ?) g`, []any{now, nDigests}},
		{`INSERT INTO feeds (url, title, state, subscriber_count, next_poll_at, created_at, updated_at)
SELECT 'https://h' || g || '.example/feed', 'Feed ' || g, 'active', 100, ?, ?, ? FROM generate_series(1, 800) g`, []any{slot.Add(24 * time.Hour), now, now}},
		{`INSERT INTO digests (user_id, name, schedule, timezone, next_slot_at, created_at)
SELECT id, 'Daily', '0 7 * * *', 'UTC', ?, ? FROM users`, []any{slot, now}},
		{`INSERT INTO subscriptions (user_id, feed_id, digest_id, state, created_at, confirmed_at)
SELECT d.user_id, (SELECT min(id) FROM feeds) + (d.user_id * 8 + k) % 800, d.id, 'active', ?, ?
FROM digests d CROSS JOIN generate_series(0, 7) k`, []any{now, now}},
		{`INSERT INTO items (feed_id, identity, title, link, content, seen_at)
SELECT f.id, 'i' || k, 'Post ' || k || ' of ' || f.title, f.url || '/post/' || k, '<p>Something new.</p>', ? FROM feeds f CROSS JOIN generate_series(1, 3) k`, []any{now}},
		{`INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, queued_at)
SELECT s.digest_id, s.id, i.id, i.feed_id, ?
FROM (SELECT id, digest_id, feed_id, row_number() OVER (PARTITION BY digest_id ORDER BY id) AS k FROM subscriptions) s
JOIN items i ON i.feed_id = s.feed_id
WHERE i.identity <> 'i3' OR s.k <= 4`, []any{now}},
		{`ANALYZE`, nil},
	}
	for _, s := range stmts {
		if err := st.DB.Exec(s.q, s.args...).Error; err != nil {
			tb.Fatalf("seed: %v\n%s", err, s.q)
		}
	}
}

// BenchmarkAssemble10kDigests: 10,000 digests due at once, each with 20
// items from 8 feeds, assembled into issues, priced (2 credits each, on the
// outbox row) and queued — on Postgres. Run with
//
//	FEEDMAIL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//	  go test -run '^$' -bench Assemble10k -benchtime 1x ./digest
//
// It reports the time for all 10,000 (goal: under 10 s).
func BenchmarkAssemble10kDigests(b *testing.B) {
	const n = 10000
	slot := time.Date(2026, 5, 4, 7, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clk := clock.NewFake(slot.Add(30 * time.Second))
		st := storetest.OpenPostgres(b, storetest.Options{Clock: clk})
		seedBench(b, st, n, slot)
		w, err := digest.NewWorker(digest.Config{Store: st, Owner: "bench", Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		issued, err := w.AssembleDue(ctx)
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(elapsed.Seconds(), "s/10k-digests")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "digests/s")

		var rows, credits, pending int64
		st.DB.Raw(`SELECT COUNT(*), COALESCE(SUM(credits), 0) FROM outbox WHERE kind = 'digest' AND state = 'queued'`).Row().Scan(&rows, &credits)
		st.DB.Model(&store.DigestItem{}).Where("issue_id IS NULL").Count(&pending)
		if issued != n || rows != n || credits != 2*n || pending != 0 {
			b.Fatalf("issued %d, %d outbox rows with %d credits, %d items left; want %d, %d, %d, 0", issued, rows, credits, pending, n, n, 2*n)
		}
		b.StartTimer()
	}
}
