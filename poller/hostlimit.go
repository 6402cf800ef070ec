package poller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// MaxInFlightPerHost is how many requests feedmail keeps in flight to one
// host at most (docs/design.md, "Request hygiene").
const MaxInFlightPerHost = 2

// HostLimiter keeps the poller polite per host: it caps the requests in
// flight to each host and remembers hosts that asked the poller to back off
// as a whole (a 429, a 503 with Retry-After).
//
// Host names are compared case-insensitively and without a trailing dot;
// callers pass url.URL.Hostname(), so a port does not make a different host.
// Waiters for a host are served first come, first served.
//
// Acquire does not wait for a back-off to end: a back-off lasts minutes to
// days, so the caller checks BackedOff before it fetches and reschedules the
// feed instead of holding a worker.
//
// A HostLimiter is safe for concurrent use. It keeps state only for hosts
// with requests in flight or waiting, or with a back-off that has not ended,
// so it does not grow with the number of hosts ever seen.
type HostLimiter struct {
	max int
	clk clock.Clock

	mu    sync.Mutex
	hosts map[string]*hostState

	// onWait, when set (tests only), is called without the lock each time an
	// Acquire call starts waiting, so tests can observe blocking without
	// sleeping.
	onWait func(host string)
}

type hostState struct {
	inFlight     int
	waiters      []chan struct{} // closed when a slot is handed over
	backoffUntil time.Time
	reason       string
}

// NewHostLimiter returns a limiter that allows maxInFlight concurrent
// requests per host (values below 1 mean MaxInFlightPerHost) and reads the
// time for back-offs from clk (nil means clock.Real{}).
func NewHostLimiter(maxInFlight int, clk clock.Clock) *HostLimiter {
	if maxInFlight < 1 {
		maxInFlight = MaxInFlightPerHost
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &HostLimiter{max: maxInFlight, clk: clk, hosts: make(map[string]*hostState)}
}

// hostKey normalises a host name.
func hostKey(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
}

// Acquire waits until fewer than maxInFlight requests to host are in flight
// and takes a slot. The returned release gives the slot back; calling it more
// than once is harmless. When ctx ends first (or has already ended), Acquire
// returns an error wrapping ctx.Err() and holds no slot.
func (l *HostLimiter) Acquire(ctx context.Context, host string) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("poller: request slot for host %q: %w", host, err)
	}
	key := hostKey(host)

	l.mu.Lock()
	st, ok := l.takeFree(key)
	if ok {
		l.mu.Unlock()
		return l.releaser(key), nil
	}
	ch := make(chan struct{})
	st.waiters = append(st.waiters, ch)
	l.mu.Unlock()

	if l.onWait != nil {
		l.onWait(key)
	}

	select {
	case <-ch:
		return l.releaser(key), nil
	case <-ctx.Done():
	}

	l.mu.Lock()
	select {
	case <-ch:
		// The slot was handed over while ctx ended: pass it on.
		l.mu.Unlock()
		l.release(key)
	default:
		for i, w := range st.waiters {
			if w == ch {
				st.waiters = append(st.waiters[:i], st.waiters[i+1:]...)
				break
			}
		}
		l.forgetIfIdle(key, st)
		l.mu.Unlock()
	}
	return nil, fmt.Errorf("poller: request slot for host %q: %w", host, ctx.Err())
}

// TryAcquire takes a slot for host if one is free and nobody is waiting,
// without waiting; ok is false otherwise.
func (l *HostLimiter) TryAcquire(host string) (release func(), ok bool) {
	key := hostKey(host)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.takeFree(key); ok {
		return l.releaser(key), true
	}
	return nil, false
}

// takeFree takes a slot of host key if one is free and nobody waits, and
// returns the host's state either way. l.mu must be held.
func (l *HostLimiter) takeFree(key string) (*hostState, bool) {
	st := l.hosts[key]
	if st == nil {
		st = &hostState{}
		l.hosts[key] = st
	}
	if st.inFlight < l.max && len(st.waiters) == 0 {
		st.inFlight++
		return st, true
	}
	return st, false
}

// releaser returns an idempotent release function for one slot.
func (l *HostLimiter) releaser(key string) func() {
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }
}

// release hands the slot to the longest waiter, or frees it.
func (l *HostLimiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.hosts[key]
	if st == nil {
		return
	}
	if len(st.waiters) > 0 {
		ch := st.waiters[0]
		st.waiters[0] = nil
		st.waiters = st.waiters[1:]
		close(ch) // the slot moves to the waiter; inFlight is unchanged
		return
	}
	if st.inFlight > 0 {
		st.inFlight--
	}
	l.forgetIfIdle(key, st)
}

// forgetIfIdle drops a host's state when nothing is in flight, nobody waits
// and no back-off is running. l.mu must be held.
func (l *HostLimiter) forgetIfIdle(key string, st *hostState) {
	if st.inFlight == 0 && len(st.waiters) == 0 && !st.backoffUntil.After(l.clk.Now()) {
		delete(l.hosts, key)
	}
}

// InFlight reports how many requests to host hold a slot (for metrics and
// tests).
func (l *HostLimiter) InFlight(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.hosts[hostKey(host)]; st != nil {
		return st.inFlight
	}
	return 0
}

// BackOff records that host must not be asked anything until until, for
// reason (shown to operators, e.g. "429: Retry-After 120 s"). An existing
// back-off is only ever lengthened: a later answer with a shorter
// Retry-After does not cut a longer one short. A time not after now is
// ignored.
func (l *HostLimiter) BackOff(host string, until time.Time, reason string) {
	if !until.After(l.clk.Now()) {
		return
	}
	key := hostKey(host)
	l.mu.Lock()
	defer l.mu.Unlock()
	// Back-offs are rare: sweep the ones that ended for hosts nobody asked
	// about since, so the map stays small.
	for k, s := range l.hosts {
		if k != key && !s.backoffUntil.IsZero() {
			l.forgetIfIdle(k, s)
		}
	}
	st := l.hosts[key]
	if st == nil {
		st = &hostState{}
		l.hosts[key] = st
	}
	if until.After(st.backoffUntil) {
		st.backoffUntil, st.reason = until, reason
	}
}

// BackedOff reports whether host is backed off now, until when and why.
func (l *HostLimiter) BackedOff(host string) (until time.Time, reason string, ok bool) {
	key := hostKey(host)
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.hosts[key]
	if st == nil {
		return time.Time{}, "", false
	}
	if !st.backoffUntil.After(l.clk.Now()) {
		st.backoffUntil, st.reason = time.Time{}, ""
		l.forgetIfIdle(key, st)
		return time.Time{}, "", false
	}
	return st.backoffUntil, st.reason, true
}
