package web

import (
	"math"
	"sync"
	"time"
)

// buckets is a set of token buckets by key (a client IP) in this process's
// memory, driven by the times the caller passes in (the server's injected
// clock): the ping endpoints', where a restart forgetting them costs
// nothing (the limits on email and fetches are in the database, Limits).
type buckets struct {
	lim Limit
	mu  sync.Mutex
	m   map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds memory: past it, buckets that have refilled completely
// (indistinguishable from absent ones) are dropped.
const maxBuckets = 100_000

func newBuckets(l Limit) *buckets { return &buckets{lim: l, m: map[string]*bucket{}} }

// allow takes a token for key at now. When none is left it returns false and
// how long until one is.
func (b *buckets) allow(key string, now time.Time) (bool, time.Duration) {
	return b.use(key, now, true)
}

// use refills key's bucket to now and, when a token is there and take is
// set, takes it.
func (b *buckets) use(key string, now time.Time, take bool) (bool, time.Duration) {
	if b.lim.Every <= 0 {
		return true, 0
	}
	burst := float64(max(b.lim.Burst, 1))
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.m[key]
	if !ok {
		if len(b.m) >= maxBuckets {
			b.prune(now, burst)
		}
		bk = &bucket{tokens: burst, last: now}
		b.m[key] = bk
	}
	if el := now.Sub(bk.last); el > 0 {
		bk.tokens = math.Min(burst, bk.tokens+float64(el)/float64(b.lim.Every))
		bk.last = now
	}
	if bk.tokens >= 1 {
		if take {
			bk.tokens--
		}
		return true, 0
	}
	wait := time.Duration((1 - bk.tokens) * float64(b.lim.Every))
	return false, wait
}

func (b *buckets) prune(now time.Time, burst float64) {
	full := time.Duration(burst * float64(b.lim.Every))
	for k, bk := range b.m {
		if now.Sub(bk.last) >= full {
			delete(b.m, k)
		}
	}
}
