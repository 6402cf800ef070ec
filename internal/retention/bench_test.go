package retention

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// BenchmarkPassPostgres times a pass over b.N×1000 settled emails and as
// many post contents past their keep, on Postgres (the database an
// operator with that much mail runs), and prints rows judged per second.
//
//	go test -run XXX -bench PassPostgres -benchtime 200x ./internal/retention
func BenchmarkPassPostgres(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	st := storetest.OpenPostgres(b, storetest.Options{Clock: clk})
	u, _, err := st.EnsureUser(ctx, "r@example.com")
	if err != nil {
		b.Fatal(err)
	}
	fd, _, err := st.EnsureFeed(ctx, "https://example.com/feed")
	if err != nil {
		b.Fatal(err)
	}
	rows := b.N * 1000
	old := now.Add(-100 * 24 * time.Hour)
	if err := st.DB.Exec(`INSERT INTO outbox (kind, dedupe_key, user_id, to_addr, state, next_attempt_at, created_at, sent_at)
SELECT 'item', 'k' || g, ?, 'r@example.com', 'sent', ?, ?, ? FROM generate_series(1, ?) g`, u.ID, old, old, old, rows).Error; err != nil {
		b.Fatal(err)
	}
	if err := st.DB.Exec(`INSERT INTO items (feed_id, identity, content, seen_at)
SELECT ?, 'i' || g, repeat('x', 400), ? FROM generate_series(1, ?) g`, fd.ID, old, rows).Error; err != nil {
		b.Fatal(err)
	}
	p := &Pruner{St: st, Policy: Default(), Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	b.ResetTimer()
	began := time.Now()
	c, err := p.Pass(ctx)
	el := time.Since(began)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	o, i := c["outbox"], c["items"]
	if o.Deleted != int64(rows) || i.Cleared != int64(rows) {
		b.Fatalf("pass deleted %d emails and cleared %d posts, want %d each", o.Deleted, i.Cleared, rows)
	}
	b.ReportMetric(float64(2*rows)/el.Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}
