package outbox

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestUnknownOutcomeLoggedAndCounted: a server that keeps a message and
// drops the connection before its reply leaves the outbox unable to know;
// the operator sees a warning that says so, the failure is counted as an
// unknown outcome apart from a 4xx refusal, and the row is retried as
// before (charged once).
func TestUnknownOutcomeLoggedAndCounted(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{DropAfterData: []string{"maybe@example.net"}, TempFail: []string{"later@example.net"}})
	var logs testutil.SyncBuffer
	maybe, sub := fx.user("maybe@example.net", 3)
	later, sub2 := fx.user("later@example.net", 3)
	r1, r2 := fx.queueItem(maybe, sub), fx.queueItem(later, sub2)
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1", func(cfg *OutboxConfig) { cfg.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	fx.pass(ob)

	if n := srv.Count(); n != 1 {
		t.Fatalf("the server kept %d messages, want 1 (the one whose reply was dropped)", n)
	}
	for _, id := range []int64{r1.ID, r2.ID} {
		if r := fx.row(id); r.State != store.OutboxQueued || r.Attempts != 1 {
			t.Errorf("row %d: state %s, %d attempts; want queued for a retry after 1", id, r.State, r.Attempts)
		}
	}
	l := logs.String()
	if n := strings.Count(l, `msg="email outcome unknown`); n != 1 || !strings.Contains(l, "to=maybe@example.net") {
		t.Errorf("%d unknown-outcome warnings (want 1, for maybe@example.net):\n%s", n, l)
	}
	for cause, want := range map[string]float64{"unknown_outcome": 1, "reply_4xx": 1, "no_reply": 0} {
		if got := metricValue(t, fx.m.SendFailures.WithLabelValues("email", cause)); got != want {
			t.Errorf("feedmail_send_failures_total{channel=email,cause=%s} = %v, want %v", cause, got, want)
		}
	}
	if b := fx.balance(maybe); b != 2 {
		t.Errorf("balance %d, want 2: charged once, kept across the retry", b)
	}
}
