package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestPostgresRestart runs two `feedmail serve` processes with every role
// on a private PostgreSQL cluster (never the shared server: other packages
// test against it at the same time), publishes posts round after round, and
// restarts the cluster (`pg_ctl restart -m fast`) right after a round's
// posts went out, while their polls and emails are in flight. The
// processes must reconnect on their own and carry on: /healthz answers 200
// again, every post published after the restart reaches every follower
// exactly once (instant emails and digests), and the posts published before
// it arrive too. The checks are the scale-out test's (see
// TestScaleOutKill9): Message-IDs counted at the sink, every fetch
// explained, one digest issue per slot.
//
// Duplicates: an email the server accepted just before the restart, whose
// "sent" record then failed, is sent again once its lease (5 min) runs out
// (the design's "process … loses its database" case). Such a row is
// allowed only when its first copy arrived before the cluster was back; the
// test reports how many there were and, unless FEEDMAIL_E2E_REAL_LEASES=1,
// does not wait for the second copy. Every email of a post published after
// the restart must arrive exactly once.
//
// Polls and digest assemblies whose write failed keep their leases (2 min)
// and are redone after them: posts of the round before the restart can
// take that long, and so does the test.
func TestPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster and two feedmail processes")
	}
	pg := startPGCluster(t)
	w := newScaleOut(t, pg.URL, scaleOutSize{feeds: 300, users: 75, hosts: 2, procs: 2, rounds: 8, perRound: 30,
		every: 5 * time.Second})
	// A poll or a digest assembly whose write failed keeps its lease (2
	// min) before another poll or assembly redoes it: the test waits for
	// that. An email the server accepted whose "sent" record failed keeps
	// its lease (5 min) and then goes out again: the test only checks that
	// it did arrive before the restart, and does not wait five minutes for
	// the second copy, unless FEEDMAIL_E2E_REAL_LEASES=1.
	realLeases := os.Getenv("FEEDMAIL_E2E_REAL_LEASES") == "1"
	w.settleWithin = 4 * time.Minute
	if realLeases {
		w.settleWithin = 8 * time.Minute
	}
	w.faultRound = 4
	var sinkAtRestart int
	var restartedAt time.Time
	w.midRun = func(round int) {
		if round != w.faultRound {
			return
		}
		w.waitBusy("%")
		start := time.Now()
		pg.restart()
		restartedAt = time.Now()
		sinkAtRestart = w.sink.Count()
		t.Logf("pg_ctl restart -m fast took %s; %d emails at the sink by then", restartedAt.Sub(start).Round(time.Millisecond), sinkAtRestart)
		for _, p := range w.procs {
			testutil.Eventually(t, 60*time.Second, p.healthy, p.name+" answers /healthz with 200 after the restart")
		}
		t.Logf("both processes answer /healthz with 200 %s after the restart", time.Since(restartedAt).Round(time.Millisecond))
	}
	w.explain = func(_ *store.OutboxEmail, copies []sinkMail) bool {
		return len(copies) == 2 && copies[0].index < sinkAtRestart
	}
	if !realLeases {
		w.lostRecord = func(_ *store.OutboxEmail, first int) bool { return first >= 0 && first < sinkAtRestart }
	}
	w.run()

	// Every duplicate was checked above: one whose first copy came after
	// the restart (every email of a later post) failed the test. Both
	// processes are still healthy.
	for _, p := range w.procs {
		if !p.healthy() {
			t.Errorf("%s does not answer /healthz with 200 at the end", p.name)
		}
		errs, nErr := p.Log.Grep("level=ERROR", 6)
		warns, nWarn := p.Log.Grep("level=WARN", 3)
		t.Logf("%s logged %d errors and %d warnings; the first ones:\n%s", p.name, nErr, nWarn, strings.Join(append(errs, warns...), "\n"))
	}
}
