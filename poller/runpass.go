package poller

import (
	"sync"
	"time"
)

// runningPass is a pass started by startPass: what its claims found, and
// when it is idle and done. n, next and claimErr are set before idle is
// closed; err before done is closed.
type runningPass struct {
	idle chan struct{} // claims ended and fewer than conc feeds left to fetch
	done chan struct{} // every claimed feed written or given back; the pass ended

	n        int       // feeds claimed
	next     time.Time // where the next pass's recent claims start (claimLoop)
	claimErr error     // why the claims stopped early
	err      error     // the whole pass's error (claims, writes, host release)

	conc int // the poller's fetch slots

	mu     sync.Mutex
	open   int  // feeds handed to the workers and not finished
	hostQ  int  // of those, feeds waiting for their host's request slot
	ended  bool // the claim loop ended
	isIdle bool // idle is closed
}

// opened counts k more feeds handed to the workers.
func (ps *runningPass) opened(k int) {
	ps.mu.Lock()
	ps.open += k
	ps.mu.Unlock()
}

// finished counts one feed finished (written, given back or failed).
func (ps *runningPass) finished() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.open--
	ps.checkIdle()
}

// waitingHost counts d more (or fewer) of the pass's feeds waiting for
// their host's request slot. A nil pass (a poll on its own) counts nothing.
func (ps *runningPass) waitingHost(d int) {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.hostQ += d
	ps.checkIdle()
}

// claimsEnded records the claim loop's outcome.
func (ps *runningPass) claimsEnded(n int, next time.Time, err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.n, ps.next, ps.claimErr, ps.ended = n, next, err, true
	ps.checkIdle()
}

// checkIdle closes idle, once, when the claims ended and fewer feeds are
// left to fetch than there are fetch slots: from then on some slot would
// wait for this pass's last fetches, which may be slow, or for its feeds
// waiting behind a busy host (hung requests hold its slots). ps.mu is
// held.
func (ps *runningPass) checkIdle() {
	if ps.ended && !ps.isIdle && ps.open-ps.hostQ < ps.conc {
		ps.isIdle = true
		close(ps.idle)
	}
}
