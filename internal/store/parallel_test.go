package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestSerialDSN(t *testing.T) {
	const off = "max_parallel_workers_per_gather=0"
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u@h/db", "postgres://u@h/db?" + off},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable&" + off},
		{"postgres://u@h/db?", "postgres://u@h/db?" + off},
		{"postgres://u@h/db?a=1&", "postgres://u@h/db?a=1&" + off},
		{"postgres://u@h/db?options=-c+x%3D1", "postgres://u@h/db?options=-c+x%3D1&" + off},
		{"postgres://u@h/db?max_parallel_workers_per_gather=4", "postgres://u@h/db?max_parallel_workers_per_gather=4"},
		{"postgres://u@h/db?options=-c%20max_parallel_workers_per_gather%3D4", "postgres://u@h/db?options=-c%20max_parallel_workers_per_gather%3D4"},
	} {
		u, err := url.Parse(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := store.SerialDSNForTest(c.dsn, u); got != c.want {
			t.Errorf("serialDSN(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// The store's Postgres sessions start no parallel workers unless the URL
// asks for them: a whole-table count, which the planner would otherwise
// split over worker processes (made cheap here), runs in the backend alone.
func TestPostgresSessionsPlanWithoutParallelWorkers(t *testing.T) {
	base := storetest.FreshDSN(t, storetest.PostgresURL(t))
	cheap := map[string]string{"parallel_setup_cost": "0", "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0"}
	for _, c := range []struct {
		name    string
		set     map[string]string
		workers string
		gather  bool
	}{
		{"default", nil, "0", false},
		{"asked for in the URL", map[string]string{"max_parallel_workers_per_gather": "2"}, "2", true},
		{"asked for in options", map[string]string{"options": "-c%20max_parallel_workers_per_gather%3D2"}, "2", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := base // a URL with a query (the test's search_path)
			for _, set := range []map[string]string{cheap, c.set} {
				for k, v := range set {
					dsn += "&" + k + "=" + v // v is encoded as the driver reads it
				}
			}
			st := storetest.OpenDSN(t, dsn, storetest.Options{})
			db := st.DB.WithContext(context.Background())
			var workers string
			if err := db.Raw("SHOW max_parallel_workers_per_gather").Scan(&workers).Error; err != nil {
				t.Fatal(err)
			}
			var plan []string
			if err := db.Raw("EXPLAIN SELECT count(*) FROM feeds WHERE next_poll_at <= now()").Scan(&plan).Error; err != nil {
				t.Fatal(err)
			}
			gather := strings.Contains(strings.Join(plan, "\n"), "Gather")
			if workers != c.workers || gather != c.gather {
				t.Errorf("max_parallel_workers_per_gather = %s, Gather in the plan %v; want %s, %v; plan:\n%s",
					workers, gather, c.workers, c.gather, strings.Join(plan, "\n"))
			}
		})
	}
}
