package bench_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/bench"
	"github.com/feedmail/feedmail/internal/testkit/pgcluster"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestChaosShort is the CI size of the chaos scenario: 2,000 feeds, 3 serve
// processes, a 3-minute window with the fixed seed, on a private cluster.
// It fails on any loss, any duplicate outside the SMTP window, more
// duplicates inside it than drops injected, or a charge that does not
// match a delivery. It runs in the Postgres pass of the suite only (it
// starts its own cluster: once is enough).
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three feedmail serve processes for minutes")
	}
	if u := os.Getenv("FEEDMAIL_TEST_DATABASE_URL"); !strings.HasPrefix(u, "postgres") {
		t.Skip("runs in the Postgres pass of the suite (FEEDMAIL_TEST_DATABASE_URL=postgres://...)")
	}
	if pgcluster.BinDir() == "" {
		testutil.SkipOrFail(t, "no initdb/pg_ctl under /usr/lib/postgresql/*/bin for the private cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	rep, err := bench.RunChaos(ctx, bench.ChaosConfig{Feeds: 2000, Processes: 3, Window: 3 * time.Minute,
		Seed: bench.DefaultChaosSeed, Drain: 12 * time.Minute, Bare: -1})
	var table strings.Builder
	if rep != nil {
		_ = rep.WriteTable(&table)
	}
	if err != nil {
		t.Fatalf("chaos: %v\n%s", err, table.String())
	}
	t.Logf("chaos report:\n%s", table.String())
	if len(rep.Failed) > 0 {
		t.Errorf("the oracle failed the run: %s", strings.Join(rep.Failed, "; "))
	}
	if rep.Expected < 500 || rep.Faults["kill -9 serve"] < 2 || rep.Faults["postgres immediate restart"] < 1 || rep.SMTP.TempFailed == 0 {
		t.Errorf("too little was tested: %d expected deliveries, faults %v, SMTP %+v; want ≥ 500, ≥ 2 kills, ≥ 1 cluster restart, some 451s",
			rep.Expected, rep.Faults, rep.SMTP)
	}
}
