package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// marker records emails as sent while the transport is still sending
// (group commit): each acceptance is handed to it as the server's 250
// arrives, and one goroutine commits whatever acceptances waited since its
// previous commit in one MarkOutboxSent. Under load the marks batch; at
// low load each is recorded within one commit's time.
//
// It also bounds what a crash can duplicate: while more than limit
// acceptances wait for their commit (the database is slow or away),
// accepted blocks, and with it the connection that delivered the message,
// so no further message is handed to the server until the marks are
// recorded. A commit that fails for good (recordRetry gave up) stops the
// sending: halt cancels the send and nothing more is recorded.
type marker struct {
	o     *Outbox
	rec   context.Context
	limit int
	pace  time.Duration
	halt  context.CancelFunc // stops the transport's sending

	mu         sync.Mutex
	waiting    []store.SentMark
	unrecorded int           // accepted, not yet committed (waiting or committing)
	changed    chan struct{} // closed and replaced after each commit
	err        error         // a failed commit or a crash: nothing more is recorded
	closing    bool

	jnl *passJournal // nil without a journal (journal.go)

	wake chan struct{}
	done chan struct{}
}

// startMarker returns a running marker committing with rec; halt cancels
// the send it records.
func (o *Outbox) startMarker(rec context.Context, halt context.CancelFunc) *marker {
	m := &marker{o: o, rec: rec, limit: o.cfg.MaxUnmarked, pace: o.cfg.MarkPace, halt: halt, jnl: o.beginJournal(),
		changed: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go m.run()
	return m
}

// accepted queues mark for the next commit, then waits (until ctx ends)
// while more than limit acceptances wait for theirs. It is safe for
// concurrent use; after a failure or a crash it records nothing.
func (m *marker) accepted(ctx context.Context, mark store.SentMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return
	}
	if m.jnl != nil {
		if err := m.jnl.add(mark); err != nil {
			m.o.cfg.Log.Warn("outbox journal write", "err", err)
		}
	}
	m.waiting = append(m.waiting, mark)
	m.unrecorded++
	select {
	case m.wake <- struct{}{}:
	default:
	}
	for m.unrecorded > m.limit && m.err == nil {
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			m.mu.Lock()
			return
		}
		m.mu.Lock()
	}
}

// run commits the waiting marks, batch after batch, until close. A commit
// follows the previous one by at least pace unless limit marks wait (or
// the marker closes): at low load a mark is committed at once, under load
// the marks of pace batch into one statement instead of one commit each.
func (m *marker) run() {
	defer close(m.done)
	var last time.Time
	for {
		m.mu.Lock()
		n, closing, failed := len(m.waiting), m.closing, m.err != nil
		m.mu.Unlock()
		switch {
		case failed || (n == 0 && closing):
			return
		case n == 0:
			<-m.wake
			continue
		case n < m.limit && !closing && time.Since(last) < m.pace:
			// Real time: this paces database work, it is not a product
			// time the clock would stand for.
			t := time.NewTimer(m.pace - time.Since(last))
			select {
			case <-t.C:
			case <-m.wake:
			}
			t.Stop()
			continue
		}
		m.mu.Lock()
		batch := m.waiting
		m.waiting = nil
		m.mu.Unlock()
		last = time.Now()
		err := m.o.markSent(m.rec, batch)
		m.mu.Lock()
		m.unrecorded -= len(batch)
		if err != nil && m.err == nil {
			m.err = err
		}
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
		if err != nil {
			m.halt()
		}
	}
}

// crash stops the marker as a process dying would: the marks waiting are
// never recorded and the sending stops (tests' crash hook).
func (m *marker) crash() {
	m.mu.Lock()
	if m.err == nil {
		m.err = errCrashed
	}
	m.waiting = nil
	close(m.changed)
	m.changed = make(chan struct{})
	if m.jnl != nil {
		m.jnl.end(true) // as the kernel does for a dead process: unlocked, kept
		m.jnl = nil
	}
	m.mu.Unlock()
	m.halt()
	m.nudge()
}

// failed returns the error that stopped the marker, if any.
func (m *marker) failed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// close waits until every mark handed over is committed (or the marker
// stopped) and returns the error that stopped it.
func (m *marker) close() error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	m.nudge()
	<-m.done
	err := m.failed()
	m.mu.Lock()
	if m.jnl != nil {
		m.jnl.end(err != nil) // kept for a replay when a commit failed
		m.jnl = nil
	}
	m.mu.Unlock()
	return err
}

func (m *marker) nudge() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
