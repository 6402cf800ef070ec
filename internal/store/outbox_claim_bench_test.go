package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// BenchmarkOutboxClaim measures outbox claims per second: 20,000 queued
// emails claimed in batches of 100 by one claimer (Postgres), the rows
// put back due between iterations. Beside it, bare-rows/s is the same
// rows read by the claim's own ORDER BY and LIMIT without claiming them,
// the floor a claim cannot beat.
func BenchmarkOutboxClaim(b *testing.B) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.OpenPostgres(b, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	u, _, err := s.EnsureUser(ctx, "queued@example.org")
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	if err := s.DB.Exec(`INSERT INTO outbox (kind, dedupe_key, user_id, to_addr, state, next_attempt_at, created_at)
SELECT 'item', 'bench:' || g, ?, 'queued@example.org', 'queued', ?::timestamptz - make_interval(secs => g), ?
FROM generate_series(1, ?) AS g`, u.ID, now, now, n).Error; err != nil {
		b.Fatal(err)
	}
	if err := s.DB.Exec("ANALYZE outbox").Error; err != nil {
		b.Fatal(err)
	}
	var claim, bare time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var last time.Time
		for got := 0; got < n; {
			var rows []struct{ NextAttemptAt time.Time }
			if err := s.DB.Raw(`SELECT next_attempt_at FROM outbox WHERE state = 'queued' AND next_attempt_at <= ? AND next_attempt_at > ?
ORDER BY next_attempt_at, id LIMIT 100`, now, last).Scan(&rows).Error; err != nil || len(rows) == 0 {
				b.Fatalf("bare read: %d rows, %v", len(rows), err)
			}
			got, last = got+len(rows), rows[len(rows)-1].NextAttemptAt
		}
		bare += time.Since(start)
		start = time.Now()
		for got := 0; got < n; {
			rows, err := s.ClaimOutbox(ctx, "bench", time.Minute, now, 100)
			if err != nil || len(rows) == 0 {
				b.Fatalf("claim: %d rows, %v", len(rows), err)
			}
			got += len(rows)
		}
		claim += time.Since(start)
		if err := s.DB.Exec("UPDATE outbox SET lease_owner = '', lease_until = NULL, next_attempt_at = ?::timestamptz - (id * interval '1 second')", now).Error; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/claim.Seconds(), "claims/s")
	b.ReportMetric(float64(n*b.N)/bare.Seconds(), "bare-rows/s")
}
