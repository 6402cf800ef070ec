package outbox

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// spamhausBlock is how a receiving server answers every reader at a domain
// once our sending IP is on a blocklist.
var spamhausBlock = &smtptest.Reply{Code: 554, Enhanced: "5.7.1",
	Message: "Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org"}

// blockable is an SMTP server that refuses every recipient at domain with
// spamhausBlock until lift is called.
type blockable struct {
	*smtptest.Server
	lifted atomic.Bool
}

func blockingServer(t *testing.T, domain string) *blockable {
	b := &blockable{}
	b.Server = smtptest.StartT(t, smtptest.Options{RcptReply: func(rcpt string) *smtptest.Reply {
		if strings.HasSuffix(strings.ToLower(rcpt), "@"+domain) && !b.lifted.Load() {
			return spamhausBlock
		}
		return nil
	}})
	return b
}

// blockScenario is the state of TestOutboxReputationBlockSlowsOneDomain.
type blockScenario struct {
	fx      *fixture
	srv     *blockable
	logs    *testutil.SyncBuffer
	w1, w2  *Outbox // two workers, as two processes
	readers []*store.User
	subs    []*store.Subscription
	rows    []*store.OutboxRow
	start   time.Time
}

const blockedDomain, otherDomain = "blocked.example", "other.example"

// newBlockScenario queues two emails to each of three readers at the
// blocked domain and two at another one.
func newBlockScenario(t *testing.T) *blockScenario {
	sc := &blockScenario{fx: newFixture(t), srv: blockingServer(t, blockedDomain), logs: &testutil.SyncBuffer{}}
	logger := slog.New(slog.NewTextHandler(sc.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	withLog := func(c *OutboxConfig) { c.Log = logger }
	sc.w1 = sc.fx.outbox(smtpTo(t, sc.srv.Server, "pool=2"), "w1", withLog)
	sc.w2 = sc.fx.outbox(smtpTo(t, sc.srv.Server, "pool=2"), "w2", withLog)
	for _, addr := range []string{"ann@" + blockedDomain, "bob@" + blockedDomain, "cy@" + blockedDomain,
		"dee@" + otherDomain, "eve@" + otherDomain} {
		u, sub := sc.fx.user(addr, 10)
		sc.readers, sc.subs = append(sc.readers, u), append(sc.subs, sub)
		sc.rows = append(sc.rows, sc.fx.queueItem(u, sub), sc.fx.queueItem(u, sub))
	}
	sc.start = sc.fx.clk.Now()
	return sc
}

// operatorWarning is the last warning logged about domain.
func (sc *blockScenario) operatorWarning(domain string) string {
	warned := ""
	for _, line := range strings.Split(sc.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "domain="+domain) {
			warned = line
		}
	}
	return warned
}

// TestOutboxReputationBlockSlowsOneDomain: the SMTP server answers every
// reader at one domain with a blocklisting (554 5.7.1 … blocked using
// zen.spamhaus.org). No reader there is counted a bounce or paused; the
// operator is told (a warning naming the domain, the reply and the fix;
// the sender-failures metric); the domain's mail is put back, due when its
// pause ends, by whichever process claims it; mail to another domain goes
// out meanwhile; once the block lifts everything is delivered: none lost,
// none twice, each charged once and never refunded.
func TestOutboxReputationBlockSlowsOneDomain(t *testing.T) {
	sc := newBlockScenario(t)
	fx, ctx := sc.fx, context.Background()
	pauseEnd := sc.start.Add(DestinationPauseBase)

	// First pass: mail to other.example goes, blocked.example refuses all.
	if n := fx.pass(sc.w1); n != 10 {
		t.Fatalf("claimed %d, want 10", n)
	}
	if got := sc.srv.Stats(); got.Accepted != 4 || got.Refused != 6 {
		t.Fatalf("first pass: %d accepted, %d refused; want 4 and 6", got.Accepted, got.Refused)
	}
	for _, r := range sc.rows {
		if got := fx.row(r.ID); strings.HasSuffix(got.Address, "@"+blockedDomain) && (got.State != store.OutboxQueued ||
			got.Attempts != 0 || !got.NextAttemptAt.Equal(pauseEnd) || got.BlockedSince == nil || !strings.Contains(got.LastError, "spamhaus")) {
			t.Errorf("blocked row %d: %s attempts %d next %v blocked_since %v %q", r.ID, got.State, got.Attempts,
				got.NextAttemptAt, got.BlockedSince, got.LastError)
		}
	}
	fx.noReaderPaused(sc.readers)
	if got := senderFailures(t, fx, bounce.Blocked); got != 6 {
		t.Errorf("feedmail_mail_sender_failures_total{reason=blocked} = %v, want 6", got)
	}
	warned := sc.operatorWarning(blockedDomain)
	if miss := hasAll(warned, "reason=blocked", "zen.spamhaus.org", "554 5.7.1", bounce.Blocked.Fix(), "emails=6"); miss != "" {
		t.Errorf("the operator's warning lacks %q: %s", miss, warned)
	}
	dests, err := fx.s.MailDestinations(ctx, []string{blockedDomain, otherDomain})
	if d := dests[blockedDomain]; err != nil || len(dests) != 1 || d.Failures != 1 || d.Reason != string(bounce.Blocked) ||
		!d.PausedUntil.Equal(pauseEnd) {
		t.Fatalf("destinations %+v, %v: want %s paused until %v", dests, err, blockedDomain, pauseEnd)
	}
	fx.smtpEvents(blockedDomain, 6)

	// Meanwhile, new mail to both domains: the other process sends the
	// one to other.example and puts the other back, unsent, unattempted.
	fx.clk.Advance(time.Minute)
	late := fx.queueItem(sc.readers[0], sc.subs[0])
	sc.rows = append(sc.rows, late, fx.queueItem(sc.readers[3], sc.subs[3]))
	if n := fx.pass(sc.w2); n != 2 {
		t.Fatalf("mid-pause pass claimed %d, want 2", n)
	}
	if got := sc.srv.Stats(); got.Accepted != 5 || got.Refused != 6 {
		t.Errorf("mid-pause: %d accepted, %d refused; want 5 and 6 (nothing tried at the paused domain)", got.Accepted, got.Refused)
	}
	if got := fx.row(late.ID); got.State != store.OutboxQueued || got.Attempts != 0 || !got.NextAttemptAt.Equal(pauseEnd) ||
		!strings.Contains(got.LastError, "paused") || fx.counter(store.KindItem, "deferred") != 1 {
		t.Errorf("mail queued during the pause: %s attempts %d next %v %q", got.State, got.Attempts, got.NextAttemptAt, got.LastError)
	}

	// The pause ends; still blocked: refused again, the pause doubles.
	fx.clk.Set(pauseEnd)
	if n := fx.pass(sc.w1); n != 7 || sc.srv.Stats().Refused != 13 {
		t.Fatalf("after the pause claimed %d, refused %d in all; want 7 and 13", n, sc.srv.Stats().Refused)
	}
	second := pauseEnd.Add(DestinationPause(2))
	if d, _ := fx.s.MailDestinations(ctx, []string{blockedDomain}); d[blockedDomain].Failures != 2 ||
		!d[blockedDomain].PausedUntil.Equal(second) {
		t.Errorf("second pause %+v, want streak 2 until %v", d[blockedDomain], second)
	}
	fx.noReaderPaused(sc.readers)

	// The block lifts; when the pause ends, everything goes, once.
	sc.srv.lifted.Store(true)
	fx.clk.Set(second)
	if n := fx.pass(sc.w2); n != 7 {
		t.Fatalf("after the block lifted claimed %d, want 7", n)
	}
	fx.pass(sc.w1)
	fx.deliveredOnce(sc.srv.Server, sc.rows)
	if d, _ := fx.s.MailDestinations(ctx, []string{blockedDomain}); len(d) != 0 {
		t.Errorf("the delivery did not end the pause: %+v", d)
	}
	for _, u := range sc.readers {
		if e := fx.entries(u); e[store.LedgerRefund] != 0 || e[store.LedgerCharge] == 0 {
			t.Errorf("%s: ledger %v, want charges only", u.Email, e)
		}
	}
	fx.noReaderPaused(sc.readers)
}

// deliveredOnce checks that every row was sent and that the server
// accepted each row's message exactly once, and nothing else.
func (fx *fixture) deliveredOnce(srv *smtptest.Server, rows []*store.OutboxRow) {
	fx.t.Helper()
	onWire := byMessageID(srv)
	for _, r := range rows {
		got := fx.row(r.ID)
		if got.State != store.OutboxSent || onWire[got.MessageID] != 1 {
			fx.t.Errorf("row %d to %s: %s (%q), on the wire %d times; want sent once", r.ID, got.Address, got.State,
				got.LastError, onWire[got.MessageID])
		}
	}
	if len(onWire) != len(rows) || duplicates(onWire) != 0 {
		fx.t.Errorf("%d messages on the wire (%d duplicates), want %d once each", len(onWire), duplicates(onWire), len(rows))
	}
}

// TestOutboxSenderSideGivesUpAfterRetryFor: a block that never lifts
// fails the email once RetryFor has passed since the destination first
// refused it: refunded, counted against nobody.
func TestOutboxSenderSideGivesUpAfterRetryFor(t *testing.T) {
	fx := newFixture(t)
	srv := blockingServer(t, "blocked.example")
	ob := fx.outbox(smtpTo(t, srv.Server, "pool=1"), "w1")
	u, sub := fx.user("ann@blocked.example", 3)
	row := fx.queueItem(u, sub)
	start := fx.clk.Now()
	tries := 0
	for fx.row(row.ID).State == store.OutboxQueued {
		if tries > 60 {
			t.Fatal("never gave up")
		}
		fx.clk.Set(fx.row(row.ID).NextAttemptAt)
		fx.pass(ob)
		tries++
	}
	got := fx.row(row.ID)
	if got.State != store.OutboxFailed || !strings.Contains(got.LastError, "gave up") || got.Attempts != 1 {
		t.Errorf("final: %s attempts %d %q", got.State, got.Attempts, got.LastError)
	}
	if waited := fx.clk.Now().Sub(start); waited < DefaultRetryFor || waited > DefaultRetryFor+DestinationPauseCap {
		t.Errorf("gave up after %v, want %v (plus at most one pause)", waited, DefaultRetryFor)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 1 || e[store.LedgerRefund] != 1 || fx.balance(u) != 3 {
		t.Errorf("ledger %v balance %d: want one charge, one refund, 3 credits", e, fx.balance(u))
	}
	fx.noReaderPaused([]*store.User{u})
	// Every pass tried once (the last try may find the block lifted);
	// none was a put-back: each pass came when the pause ended.
	if srv.Stats().Refused != tries {
		t.Errorf("refused %d times in %d passes", srv.Stats().Refused, tries)
	}
}

// TestOutboxFailureVerdicts: each kind of SMTP refusal, to a reader of its
// own: what it did to the row, the reader and the ledger.
func TestOutboxFailureVerdicts(t *testing.T) {
	replies := map[string]*smtptest.Reply{
		"gone@a.example":  {Code: 550, Enhanced: "5.1.1", Message: "No such user here"},
		"full@b.example":  {Code: 552, Enhanced: "5.2.2", Message: "Mailbox full"},
		"weird@c.example": {Code: 550, Message: "Rejected"},
		"dmarc@d.example": {Code: 550, Enhanced: "5.7.26", Message: "Unauthenticated email is not accepted due to the domain's DMARC policy"},
		"busy@e.example":  {Code: 451, Enhanced: "4.3.0", Message: "Temporary local problem, please try again"},
	}
	srv := smtptest.StartT(t, smtptest.Options{RcptReply: func(rcpt string) *smtptest.Reply { return replies[strings.ToLower(rcpt)] }})
	fx := newFixture(t)
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1")
	want := map[string]struct {
		state            string
		attempts, hard   int
		refund           bool
		reason, severity string
	}{
		"gone@a.example":  {store.OutboxFailed, 1, 1, true, "unknown-user", "hard"},
		"full@b.example":  {store.OutboxFailed, 1, 0, true, "mailbox-full", "soft"},
		"weird@c.example": {store.OutboxFailed, 1, 0, true, "undetermined", ""},
		"dmarc@d.example": {store.OutboxQueued, 0, 0, false, "authentication", ""},
		"busy@e.example":  {store.OutboxQueued, 1, 0, false, "temporary", ""},
	}
	rows := map[string]*store.OutboxRow{}
	users := map[string]*store.User{}
	for addr := range want {
		u, sub := fx.user(addr, 5)
		users[addr], rows[addr] = u, fx.queueItem(u, sub)
	}
	fx.pass(ob)
	for addr, w := range want {
		got := fx.row(rows[addr].ID)
		u, _ := fx.s.UserByID(context.Background(), users[addr].ID)
		e := fx.entries(users[addr])
		if got.State != w.state || got.Attempts != w.attempts || u.HardBounces != w.hard || (e[store.LedgerRefund] == 1) != w.refund {
			t.Errorf("%s: %s attempts %d hard %d ledger %v; want %s %d %d refund %v", addr, got.State, got.Attempts,
				u.HardBounces, e, w.state, w.attempts, w.hard, w.refund)
		}
		var ev store.MailEvent
		if err := fx.s.DB.Where("outbox_id = ?", got.ID).Take(&ev).Error; err != nil {
			t.Errorf("%s: no mail event: %v", addr, err)
			continue
		}
		if ev.Source != store.MailSourceSMTP || ev.Reason != w.reason || ev.Severity != w.severity ||
			ev.Domain != store.AddressDomain(addr) || ev.Status == "" {
			t.Errorf("%s: event %+v, want reason %s severity %q", addr, ev, w.reason, w.severity)
		}
	}
}

// noReaderPaused checks that none of users is counted a bounce or marked
// bouncing.
func (fx *fixture) noReaderPaused(users []*store.User) {
	fx.t.Helper()
	for _, u := range users {
		got, err := fx.s.UserByID(context.Background(), u.ID)
		if err != nil {
			fx.t.Fatal(err)
		}
		if got.HardBounces != 0 || got.BouncingSince != nil {
			fx.t.Errorf("%s: hard_bounces %d bouncing_since %v, want 0 and nil", got.Email, got.HardBounces, got.BouncingSince)
		}
	}
}

// smtpEvents checks that domain has n sender-side mail events from SMTP.
func (fx *fixture) smtpEvents(domain string, n int64) {
	fx.t.Helper()
	var got int64
	if err := fx.s.DB.Model(&store.MailEvent{}).Where("domain = ? AND source = ? AND party = ? AND reason = ? AND status = ?",
		domain, store.MailSourceSMTP, "sender", "blocked", "5.7.1").Count(&got).Error; err != nil {
		fx.t.Fatal(err)
	}
	if got != n {
		fx.t.Errorf("%d sender-side smtp events for %s, want %d", got, domain, n)
	}
}

// senderFailures reads feedmail_mail_sender_failures_total{reason}.
func senderFailures(t *testing.T, fx *fixture, r bounce.Reason) float64 {
	t.Helper()
	var m dto.Metric
	if err := fx.m.SenderFailures.WithLabelValues(string(r)).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
