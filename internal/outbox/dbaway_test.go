package outbox

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/dbproxy"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestOutboxDatabaseAwayAfterClaim loses the database (every connection
// cut, new ones refused for half a second) right after a pass claimed its
// emails, before it charged them. The pass cannot go on; the rows it
// claimed must be given back as soon as the database answers again, not
// left leased for minutes: a second worker sends every one of them at once,
// each exactly once and charged once.
func TestOutboxDatabaseAwayAfterClaim(t *testing.T) {
	const emails = 5
	clk := clock.NewFake(t0)
	dsn := storetest.FreshDSN(t, storetest.PostgresURL(t))
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := dbproxy.Start(t, u.Host)
	cut := storetest.OpenDSN(t, px.Through(t, dsn), storetest.Options{Clock: clk})
	fx := newFixtureOn(t, storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk}), clk)
	srv := smtptest.StartT(t, smtptest.Options{})
	user, sub := fx.user("away@example.net", 10)
	for range emails {
		fx.queueItem(user, sub)
	}
	a := fx.outbox(smtpTo(t, srv, ""), "cut-off", func(cfg *OutboxConfig) { cfg.Store = cut })
	a.crash = func(step string) bool {
		if step == "claimed" {
			px.Cut(500 * time.Millisecond)
		}
		return false
	}
	_, err = a.SendDue(context.Background())
	t.Logf("the pass that lost the database: %v", err)

	// Inside the lease: the rows are back in the queue for anyone.
	b := fx.outbox(smtpTo(t, srv, ""), "successor")
	fx.pass(b)
	counts := byMessageID(srv)
	if len(counts) != emails || duplicates(counts) != 0 {
		t.Fatalf("%d distinct emails arrived (want %d), %d duplicates (want 0): the claimed rows were not given back",
			len(counts), emails, duplicates(counts))
	}
	var sent int64
	fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
	if e := fx.entries(user); sent != emails || e[store.LedgerCharge] != emails || fx.balance(user) != 10-emails {
		t.Errorf("%d rows sent (want %d), ledger %v, balance %d (want %d charges)", sent, emails, e, fx.balance(user), emails)
	}
}
