package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// The parallel workers of a query of serve's take its application_name:
// pgPids must tell them from serve's connections, or every parallel query
// reads as backends that came and went.
func TestPgPidsTellsParallelWorkersFromBackends(t *testing.T) {
	base := storetest.FreshDSN(t, storetest.PostgresURL(t))
	const app = "feedbench-pgpids-test"
	serve := storetest.OpenDSN(t, base+"&application_name="+app+"&max_parallel_workers_per_gather=2"+
		"&parallel_setup_cost=0&parallel_tuple_cost=0&min_parallel_table_scan_size=0", storetest.Options{MaxOpenConns: 1, NoMigrate: true})
	probe := storetest.OpenDSN(t, base, storetest.Options{MaxOpenConns: 1, NoMigrate: true})
	ctx := context.Background()
	db := serve.DB.WithContext(ctx)
	// Two rows a page, so that every worker gets pages to scan.
	for _, q := range []string{"CREATE TABLE slow (g int, pad text)", "ALTER TABLE slow ALTER pad SET STORAGE PLAIN",
		"INSERT INTO slow SELECT g, repeat('x', 3500) FROM generate_series(1, 24) g"} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	var leader int
	if err := db.Raw("SELECT pg_backend_pid()").Scan(&leader).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { // each row sleeps: the workers live for about a second
		done <- db.Exec("SELECT count(*) FROM slow WHERE pg_sleep(0.1) IS NOT NULL").Error
	}()
	var backends, workers []int
	for deadline := time.Now().Add(20 * time.Second); len(workers) == 0 && time.Now().Before(deadline); {
		var err error
		if backends, workers, _, err = pgPids(ctx, probe, app, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(workers) == 0 || !slices.Equal(backends, []int{leader}) || slices.Contains(workers, leader) {
		t.Errorf("backends %v, parallel workers %v; want backends [%d] and its workers apart", backends, workers, leader)
	}
}
