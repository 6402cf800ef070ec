package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// The readers of the SMTP rows; victim is the address the faults aim at.
const victim = "victim@example.net"

var smtpReaders = []string{"ann@example.net", "bob@example.net", victim, "dot@example.net"}

// smtpRow is one misbehaving SMTP server of the matrix.
type smtpRow struct {
	name string
	opts smtptest.Options
	// params are added to the smtp:// URL of the transport.
	params string
	// down: the server is closed before the pass (connection refused).
	down bool
	// Outcome of the first pass over the four queued emails: how many are
	// sent, retried (temporary: queued again with 1 min backoff) and
	// failed (permanent: refunded, counted as a hard bounce).
	sent, retry, failed int
	// lastError is a fragment of the retried or failed rows' last_error.
	lastError string
	// slowed: the refusal is the sender's own problem (a rate limit): the
	// row waits, with no attempt counted, for its destination's pause
	// (outbox.DestinationPauseBase) instead of its own backoff.
	slowed bool
}

// smtpRows is the SMTP half of the matrix (docs/design.md, "Email": 4xx → retry
// with backoff for up to 3 days; 5xx → failed, the address marked bouncing
// after repeated hard failures; a refusal for the sender's own sake, such
// as a rate limit → the destination paused, the email retried after it).
var smtpRows = []smtpRow{
	{name: "421 and hang-up after two messages in a session", opts: smtptest.Options{Reply421After: 2}, params: "pool=1",
		sent: 3, retry: 1, lastError: "421", slowed: true},
	{name: "450 mailbox busy", opts: smtptest.Options{TempFail: []string{victim}}, params: "pool=1",
		sent: 3, retry: 1, lastError: "450"},
	{name: "550 no such user", opts: smtptest.Options{PermFail: []string{victim}}, params: "pool=1",
		sent: 3, failed: 1, lastError: "550"},
	{name: "connection dropped in DATA", opts: smtptest.Options{DropDuringData: []string{victim}}, params: "pool=1",
		sent: 3, retry: 1},
	{name: "reply to DATA never comes", opts: smtptest.Options{Stall: []string{victim}}, params: "pool=1&timeout=300ms",
		sent: 3, retry: 1},
	{name: "server down (connection refused)", down: true, params: "pool=1&timeout=1s",
		retry: 4},
}

// TestSMTPFaults: a feed post is polled into four queued emails, which the
// outbox worker sends through a misbehaving SMTP server; then the server
// behaves, the clock passes the backoff, and the retried email is sent.
// Each row checks the outcome of every row of the outbox, the ledger (one
// charge per email, a refund for a failed one), the bounce count, the
// metrics, and that the wire saw every delivered message exactly once.
func TestSMTPFaults(t *testing.T) {
	for _, row := range smtpRows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			runSMTPRow(t, row)
		})
	}
}

func runSMTPRow(t *testing.T, row smtpRow) {
	e := newEnv(t)
	ff := e.fm.AddFeed(farm.Spec{Title: "Mail feed", ItemCount: 3, ItemInterval: time.Hour, ETag: farm.ETagStrong})
	f := e.follow(ff.URL(), 10, smtpReaders...)
	p := e.poller(nil)
	e.pass(p, 1)
	e.clk.Advance(10 * time.Minute)
	ff.Publish()
	e.pass(p, 1)
	queued := e.outbox()
	if len(queued) != len(smtpReaders) {
		t.Fatalf("%d emails queued, want %d", len(queued), len(smtpReaders))
	}
	items := e.items(f.ID)

	faulty := smtptest.StartT(t, row.opts)
	healthy := smtptest.StartT(t, smtptest.Options{})
	tr := &smtptest.Switch{}
	tr.Set(smtpTo(t, faulty, row.params))
	if row.down {
		if err := faulty.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ob := e.outboxWorker(tr)
	if n := e.send(ob); n != len(queued) {
		t.Fatalf("first pass claimed %d, want %d", n, len(queued))
	}
	now := e.clk.Now()
	wait, attempts := outbox.RetryBase, 1
	if row.slowed {
		wait, attempts = outbox.DestinationPauseBase, 0
	}
	var sent, retry, failed int
	for _, id := range keys(queued) {
		r := e.outbox()[id]
		switch r.State {
		case store.OutboxSent:
			sent++
		case store.OutboxQueued:
			retry++
			if r.Attempts != attempts || !r.NextAttemptAt.Equal(now.Add(wait)) || r.LastError == "" {
				t.Errorf("retried row %d: attempts %d (want %d), next %v (want %v), last error %q", id, r.Attempts,
					attempts, r.NextAttemptAt, now.Add(wait), r.LastError)
			}
		case store.OutboxFailed:
			failed++
		default:
			t.Errorf("row %d in state %q", id, r.State)
		}
		if r.State != store.OutboxSent && row.lastError != "" && !strings.Contains(r.LastError, row.lastError) {
			t.Errorf("row %d: last error %q lacks %q", id, r.LastError, row.lastError)
		}
	}
	if sent != row.sent || retry != row.retry || failed != row.failed {
		t.Fatalf("first pass: %d sent, %d retry, %d failed; want %d, %d, %d", sent, retry, failed, row.sent, row.retry, row.failed)
	}
	if row.opts.Reply421After > 0 && faulty.Stats().Replied421 == 0 {
		t.Error("the server never said 421")
	}
	if got := counter(t, e.m.Emails.WithLabelValues(store.KindItem, "retry")); int(got) != retry {
		t.Errorf("feedmail_emails_total{result=retry} = %v, want %d", got, retry)
	}
	if got := counter(t, e.m.Emails.WithLabelValues(store.KindItem, "failed")); int(got) != failed {
		t.Errorf("feedmail_emails_total{result=failed} = %v, want %d", got, failed)
	}
	if failed > 0 {
		v := e.user(victim)
		if v.HardBounces != 1 {
			t.Errorf("victim's hard bounces %d, want 1", v.HardBounces)
		}
		if b, _ := e.st.Balance(e.ctx, v.ID); b != 10 {
			t.Errorf("victim's balance %d after the refund, want 10", b)
		}
	}
	e.keepsAll(f.ID, items, queued)

	// The server behaves again; after the backoff everything retried goes.
	tr.Set(smtpTo(t, healthy, ""))
	e.clk.Advance(wait)
	e.send(ob)
	for _, id := range keys(queued) {
		r := e.outbox()[id]
		want := store.OutboxSent
		if r.Address == victim && row.failed > 0 {
			want = store.OutboxFailed
		}
		if r.State != want {
			t.Errorf("after recovery row %d (%s): %s (%s), want %s", id, r.Address, r.State, r.LastError, want)
		}
	}
	servers := []*smtptest.Server{healthy}
	if !row.down {
		servers = append(servers, faulty)
	}
	ids := messageIDs(servers...)
	if len(ids) != len(queued)-row.failed {
		t.Errorf("%d distinct messages on the wire, want %d", len(ids), len(queued)-row.failed)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
	// One charge per email whatever the retries; the failed one refunded.
	for _, addr := range smtpReaders {
		u := e.user(addr)
		es, err := e.st.LedgerOf(e.ctx, u.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, le := range es {
			kinds[le.Kind]++
		}
		wantRefund := 0
		if addr == victim && row.failed > 0 {
			wantRefund = 1
		}
		if kinds[store.LedgerCharge] != 1 || kinds[store.LedgerRefund] != wantRefund {
			t.Errorf("%s: ledger %v, want 1 charge and %d refund", addr, kinds, wantRefund)
		}
	}
	e.keepsAll(f.ID, items, queued)
}
