package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestOnStatementCountsRoundTrips checks that Options.OnStatement hears every
// round trip: a gorm statement, a transaction's BEGIN, statement and COMMIT,
// and the raw pool calls of a feed claim; and that the pool still answers
// Ping and Close through the counting wrapper.
func TestOnStatementCountsRoundTrips(t *testing.T) {
	ctx := context.Background()
	var n atomic.Int64
	st, err := store.Open(ctx, storetest.FreshDSN(t, storetest.URL()), store.Options{OnStatement: func() { n.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(what string, want int64, fn func() error) {
		t.Helper()
		before := n.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := n.Load() - before; got < want {
			t.Errorf("%s: %d round trips counted, want at least %d", what, got, want)
		}
	}
	step("one statement", 1, func() error { return st.DB.WithContext(ctx).Exec("SELECT 1").Error })
	step("a transaction", 3, func() error {
		return st.Tx(ctx, func(tx *store.Store) error { return tx.DB.Exec("SELECT 1").Error })
	})
	step("a claim", 1, func() error {
		_, _, err := st.ClaimDueFeeds(ctx, "count-test", time.Minute, time.Now(), 10, nil, time.Time{})
		return err
	})
}
