package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/dbproxy"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestOutboxDatabaseAwayAfterClaim loses the database (every connection
// cut, new ones refused for half a second) right after a pass claimed its
// emails, before it charged them. The pass cannot go on; the rows it
// claimed must be given back as soon as the database answers again, not
// left leased for minutes: a second worker sends every one of them at once,
// each exactly once and charged once.
func TestOutboxDatabaseAwayAfterClaim(t *testing.T) {
	const emails = 5
	fx, cut, px := proxiedFixture(t)
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
	_, err := a.SendDue(context.Background())
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

// TestOutboxDatabaseAwayHoldsTheSend loses the database (every connection
// cut, new ones refused for three seconds) as the server accepts the 5th
// of 20 emails. The marks of what the server accepts can no longer be
// recorded, so the outbox must stop handing emails over until they are: a
// kill while the database is away would send every accepted, unrecorded
// email twice. During the cut the server may get at most the emails whose
// marks may wait plus one per connection; once the database is back
// everything goes out, each exactly once, marked sent and charged once.
func TestOutboxDatabaseAwayHoldsTheSend(t *testing.T) {
	const emails, pool, maxUnmarked, cutAt, cutFor = 20, 2, 2, 5, 3 * time.Second
	fx, cut, px := proxiedFixture(t)
	var mu sync.Mutex
	var arrivals []time.Time
	var cutEnd time.Time
	srv := smtptest.StartT(t, smtptest.Options{BeforeAccept: func() {
		mu.Lock()
		defer mu.Unlock()
		arrivals = append(arrivals, time.Now())
		if len(arrivals) == cutAt {
			px.Cut(cutFor)
			cutEnd = time.Now().Add(cutFor)
		}
	}})
	user, sub := fx.user("away@example.net", emails)
	for range emails {
		fx.queueItem(user, sub)
	}
	o := fx.outbox(smtpTo(t, srv, fmt.Sprintf("pool=%d", pool)), "cut-off", func(cfg *OutboxConfig) {
		cfg.Store, cfg.MaxUnmarked = cut, maxUnmarked
	})
	if n, err := o.SendDue(context.Background()); n != emails || err != nil {
		t.Fatalf("the pass through the cut: claimed %d (want %d), %v", n, emails, err)
	}
	mu.Lock()
	during := 0
	for _, at := range arrivals[cutAt:] {
		if at.Before(cutEnd) {
			during++
		}
	}
	mu.Unlock()
	t.Logf("%d emails handed over while the database was away", during)
	if during > maxUnmarked+pool {
		t.Errorf("%d emails handed over while the database was away, want at most %d (MaxUnmarked + connections)",
			during, maxUnmarked+pool)
	}
	counts := byMessageID(srv)
	var sent int64
	fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
	if e := fx.entries(user); len(counts) != emails || duplicates(counts) != 0 || sent != emails || e[store.LedgerCharge] != emails {
		t.Errorf("%d distinct emails arrived, %d twice, %d rows sent, ledger %v; want %d, none twice, %d, %d charges",
			len(counts), duplicates(counts), sent, e, emails, emails, emails)
	}
}

// TestOutboxRunLogsDatabaseAwayOnce: while the database is away (every
// connection cut, new ones refused for two seconds) the mailer's loops
// fail pass after pass; the operator sees one line when the role starts
// waiting and one when it is back, with the wait in /metrics — not an
// error line per failed pass.
func TestOutboxRunLogsDatabaseAwayOnce(t *testing.T) {
	fx, cut, px := proxiedFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	o := fx.outbox(smtpTo(t, srv, ""), "mailer", func(cfg *OutboxConfig) {
		cfg.Store, cfg.Log, cfg.PollInterval = cut, log, 20*time.Millisecond
		cfg.DBWait = dbwait.New(log, fx.m, clock.Real{})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = o.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	px.Cut(2 * time.Second)
	testutil.EventuallySeen(t, time.Minute, func() (bool, string) {
		l := logs.String()
		return strings.Contains(l, "database reachable again"), l
	}, "the mailer logs that the database is back")
	cancel()
	<-done
	l := logs.String()
	for line, want := range map[string]int{`msg="database unreachable: waiting for it" role=mailer`: 1,
		`msg="database reachable again" role=mailer waited=`: 1, "outbox pass failed": 0} {
		if n := strings.Count(l, line); n != want {
			t.Errorf("%d log lines with %q, want %d:\n%s", n, line, want, l)
		}
	}
	if up := metricValue(t, fx.m.DatabaseUp); up != 1 {
		t.Errorf("feedmail_database_up = %v after the database came back, want 1", up)
	}
	if w := metricValue(t, fx.m.DatabaseWait.WithLabelValues("mailer")); w <= 0 || w > 60 {
		t.Errorf("feedmail_database_wait_seconds_total{role=mailer} = %v, want the wait (about 2 s)", w)
	}
}

// metricValue reads the one series of c, a gauge or a counter.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var d dto.Metric
	if err := (<-ch).Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

// proxiedFixture returns a fixture on a fresh Postgres database, a second
// handle on that database through a proxy (the process whose database
// goes away) and the proxy that cuts it.
func proxiedFixture(t *testing.T) (*fixture, *store.Store, *dbproxy.Proxy) {
	t.Helper()
	clk := clock.NewFake(t0)
	dsn := storetest.FreshDSN(t, storetest.PostgresURL(t))
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := dbproxy.Start(t, u.Host)
	cut := storetest.OpenDSN(t, px.Through(t, dsn), storetest.Options{Clock: clk})
	return newFixtureOn(t, storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk}), clk), cut, px
}
