package outbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// TestOutboxRenewsItsLeaseWhileAPassRunsLong: a pass whose server holds
// the first email for three leases keeps its rows, because it renews the
// lease while it runs: a rival worker trying all along claims none of
// them, the held pass sends them all in the end, each exactly once. With
// a lease that is not renewed the rival takes the rows after one lease
// (and the held pass's send is cut off), which is what made the lease
// long, and a killed worker's rows wait for it.
func TestOutboxRenewsItsLeaseWhileAPassRunsLong(t *testing.T) {
	const emails, lease, hold = 3, time.Second, 3 * time.Second
	fx := newFixture(t)
	fx.clk.Set(time.Now()) // the claims' clock follows the wall clock below
	release := make(chan struct{})
	var once sync.Once
	held := make(chan struct{})
	srv := smtptest.StartT(t, smtptest.Options{BeforeAccept: func() {
		once.Do(func() {
			close(held)
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
		})
	}})
	user, sub := fx.user("slow@example.net", emails)
	for range emails {
		fx.queueItem(user, sub)
	}
	short := func(cfg *OutboxConfig) { cfg.Lease = lease }
	slow := fx.outbox(smtpTo(t, srv, ""), "slow", short)
	rival := fx.outbox(smtpTo(t, srv, ""), "rival", short)

	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := slow.SendDue(context.Background())
		done <- result{n, err}
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first email never reached the server")
	}
	taken := 0
	tick := time.NewTicker(lease / 10)
	for until := time.Now().Add(hold); time.Now().Before(until); <-tick.C {
		fx.clk.Set(time.Now())
		n, err := rival.SendDue(context.Background())
		if err != nil {
			t.Fatalf("rival pass: %v", err)
		}
		taken += n
	}
	tick.Stop()
	close(release)
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the held pass never ended after the server let go")
	}
	if r.n != emails || r.err != nil {
		t.Errorf("held pass: claimed %d, %v; want %d, nil", r.n, r.err, emails)
	}
	if taken != 0 {
		t.Errorf("the rival claimed %d rows of a pass that was still running (lease %s, held %s)", taken, lease, hold)
	}
	counts := byMessageID(srv)
	var sent int64
	fx.s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
	if len(counts) != emails || duplicates(counts) != 0 || sent != emails {
		t.Errorf("%d distinct emails arrived, %d twice, %d rows sent; want %d, none twice, %d",
			len(counts), duplicates(counts), sent, emails, emails)
	}
	if v := metricValue(t, fx.m.OutboxLeaseRenewals.WithLabelValues("renewed")); v < 2 {
		t.Errorf("%v lease renewals counted in /metrics, want at least 2 over %s", v, hold)
	}
}

// TestLeaseMargins: the send stops before the lease ends, and renewals
// come often enough that three may fail first.
func TestLeaseMargins(t *testing.T) {
	for _, lease := range []time.Duration{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute} {
		every, send := renewEvery(lease), sendMargin(lease)
		if !(send < lease && 3*every < lease-send) {
			t.Errorf("lease %s: renew every %s, the send stops %s before its end", lease, every, send)
		}
	}
}
