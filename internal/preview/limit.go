package preview

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket: Burst previews at once, then one more every
// Every. Every of zero means no limit.
type Limit struct {
	Every time.Duration
	Burst int
}

// Limits are the rates of previews: per client (an IP address, an API
// token) and per feed address, whoever asks.
type Limits struct {
	PerClient, PerFeed Limit
}

// DefaultLimits let a person try every format and digest of a few feeds
// at once, then one preview every 10 seconds; a feed is previewed at most
// 60 times at once and then 12 times a minute by everyone together. With
// the reuse of fetches, a site sees at most one fetch per Reuse period.
func DefaultLimits() Limits {
	return Limits{
		PerClient: Limit{Every: 10 * time.Second, Burst: 30},
		PerFeed:   Limit{Every: 5 * time.Second, Burst: 60},
	}
}

// maxKeys bounds a limiter's memory: past it, keys whose bucket is full
// again (as good as absent) are dropped.
const maxKeys = 50_000

// keyed is a set of token buckets by key, driven by the times passed in
// (the injected clock).
type keyed struct {
	lim Limit
	mu  sync.Mutex
	m   map[string]*rate.Limiter
}

func newKeyed(l Limit) *keyed { return &keyed{lim: l, m: map[string]*rate.Limiter{}} }

// allow takes a token for key at now; when none is left it returns false
// and how long until one is.
func (k *keyed) allow(key string, now time.Time) (bool, time.Duration) {
	if k.lim.Every <= 0 || key == "" {
		return true, 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	l, ok := k.m[key]
	if !ok {
		if len(k.m) >= maxKeys {
			k.prune(now)
		}
		l = rate.NewLimiter(rate.Every(k.lim.Every), max(k.lim.Burst, 1))
		k.m[key] = l
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// prune drops the buckets that are full again.
func (k *keyed) prune(now time.Time) {
	for key, l := range k.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(k.m, key)
		}
	}
}
