package api

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxBuckets bounds the limiters kept; past it, full ones (the same as
// absent ones) are dropped.
const maxBuckets = 50_000

// buckets holds a token bucket per API token, driven by the times the
// caller passes (the server's injected clock). Each process keeps its own.
type buckets struct {
	lim Limit
	mu  sync.Mutex
	m   map[int64]*rate.Limiter
}

func newBuckets(l Limit) *buckets { return &buckets{lim: l, m: map[int64]*rate.Limiter{}} }

// take takes one request from token id's bucket at now; when it is empty
// it returns false and how long until a request is allowed.
func (b *buckets) take(id int64, now time.Time) (bool, time.Duration) {
	burst := max(b.lim.Burst, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.m[id]
	if !ok {
		if len(b.m) >= maxBuckets {
			for k, old := range b.m {
				if old.TokensAt(now) >= float64(burst) {
					delete(b.m, k)
				}
			}
		}
		l = rate.NewLimiter(rate.Every(b.lim.Every), burst)
		b.m[id] = l
	}
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}
