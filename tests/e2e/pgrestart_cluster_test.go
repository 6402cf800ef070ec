package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/pgcluster"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// pgCluster is a private PostgreSQL cluster for one test (package
// pgcluster); the shared server on 5432 is never touched.
type pgCluster struct {
	t   *testing.T
	c   *pgcluster.Cluster
	URL string // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
}

// startPGCluster starts a cluster (skipped, or failed under CI=true, when
// the machine cannot run one), stopped and removed at cleanup.
func startPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
	if errors.Is(err, pgcluster.ErrUnavailable) {
		testutil.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Logf("stopping the private cluster: %v", err)
		}
	})
	return &pgCluster{t: t, c: c, URL: c.URL}
}

// restart is `pg_ctl restart -m fast`: connections are cut, the server
// comes back on the same port.
func (p *pgCluster) restart() {
	p.t.Helper()
	if err := p.c.Restart(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}
