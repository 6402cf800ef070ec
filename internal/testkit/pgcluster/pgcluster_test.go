package pgcluster

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestRestartImmediate: the cluster answers, goes away on an immediate
// restart, answers again on the same URL with its data kept, and Stop
// removes it.
func TestRestartImmediate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{MaxConnections: 20})
	if errors.Is(err, ErrUnavailable) {
		testutil.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	db, err := sql.Open("pgx", c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	down, err := c.RestartImmediate(ctx, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if down < 200*time.Millisecond {
		t.Errorf("down %s, want at least the 200ms asked for", down)
	}
	// The pool's connections died with the server: the first queries may
	// fail until the pool has replaced them.
	var n int
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	for err = db.QueryRowContext(ctx, "SELECT n FROM kept").Scan(&n); err != nil && time.Now().Before(deadline); <-tick.C {
		err = db.QueryRowContext(ctx, "SELECT n FROM kept").Scan(&n)
	}
	if err != nil || n != 42 {
		t.Fatalf("a minute after the restart: n=%d err=%v, want 42 from the kept table", n, err)
	}
}
