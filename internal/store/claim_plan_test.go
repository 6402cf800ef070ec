package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestOutboxClaimReadsByKey: with tens of thousands of emails queued, the
// outbox claim's generic plan (the one a prepared statement settles on)
// reads the claimed rows by primary key. Written "id IN (SELECT …)" it
// hash-joined them with a sequential scan of the whole outbox on every
// claim.
func TestOutboxClaimReadsByKey(t *testing.T) {
	s := storetest.OpenDSN(t, storetest.FreshDSN(t, storetest.PostgresURL(t)), storetest.Options{})
	ctx := context.Background()
	db := s.DB.WithContext(ctx)
	u, _, err := s.EnsureUser(ctx, "queued@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`INSERT INTO outbox (kind, dedupe_key, user_id, to_addr, state, next_attempt_at, created_at)
SELECT 'item', 'plan:' || g, ?, 'queued@example.org', 'queued', now() - make_interval(secs => g), now()
FROM generate_series(1, 30000) AS g`, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("ANALYZE outbox").Error; err != nil {
		t.Fatal(err)
	}
	q := store.OutboxClaimSQLForTest(s)
	for i := 1; strings.Contains(q, "?"); i++ {
		q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
	}
	// One connection for the session settings and the prepared statement.
	err = s.Tx(ctx, func(tx *store.Store) error {
		for _, stmt := range []string{"SET LOCAL plan_cache_mode = force_generic_plan",
			"PREPARE claim(timestamptz, integer, text, timestamptz, timestamptz) AS " + q} {
			if err := tx.DB.WithContext(ctx).Exec(stmt).Error; err != nil {
				return err
			}
		}
		var plan []string
		if err := tx.DB.WithContext(ctx).Raw("EXPLAIN EXECUTE claim(now(), 100, 'w', now(), now())").Scan(&plan).Error; err != nil {
			return err
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan on outbox") || !strings.Contains(text, "outbox_pkey") {
			t.Errorf("the claim's generic plan scans the outbox instead of reading the claimed rows by key:\n%s", text)
		}
		return tx.DB.WithContext(ctx).Exec("DEALLOCATE claim").Error
	})
	if err != nil {
		t.Fatal(err)
	}
}
