package web

import (
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limit is a token bucket: Burst requests at once, then one more every Every.
// Every of zero means no limit.
type Limit struct {
	Every time.Duration
	Burst int
}

// Limits are the rate limits on the forms that make feedmail send email.
type Limits struct {
	SignupPerIP      Limit // POST /subscriptions, per client IP
	SignupPerAddress Limit // POST /subscriptions, per email address: only attempts that email it count
	SignInPerIP      Limit // POST /signin, per client IP
	SignInPerAddress Limit // POST /signin, per email address
}

// DefaultLimits are generous for people and tight for scripts: an address
// gets at most 5 confirmation emails at once and then one every 10 minutes,
// and 3 sign-in links at once, then one every 15 minutes.
func DefaultLimits() Limits {
	return Limits{
		SignupPerIP:      Limit{Every: 30 * time.Second, Burst: 20},
		SignupPerAddress: Limit{Every: 10 * time.Minute, Burst: 5},
		SignInPerIP:      Limit{Every: time.Minute, Burst: 10},
		SignInPerAddress: Limit{Every: 15 * time.Minute, Burst: 3},
	}
}

// NoLimits turns rate limiting off (benchmarks).
func NoLimits() Limits { return Limits{} }

type rateLimits struct {
	signupIP, signupAddr, signInIP, signInAddr *buckets
}

func newRateLimits(l Limits) rateLimits {
	return rateLimits{
		signupIP: newBuckets(l.SignupPerIP), signupAddr: newBuckets(l.SignupPerAddress),
		signInIP: newBuckets(l.SignInPerIP), signInAddr: newBuckets(l.SignInPerAddress),
	}
}

// buckets is a set of token buckets by key (an IP or an address), driven by
// the times the caller passes in (the server's injected clock).
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

// check is allow without taking the token: for a limit that counts only
// the requests that end up sending mail (take them with allow then).
func (b *buckets) check(key string, now time.Time) (bool, time.Duration) {
	return b.use(key, now, false)
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

// clientIP is the TCP peer's address (see the package comment on proxies).
// IPv6 clients are bucketed by their /64, which one subscriber usually has.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// addressKey is the rate-limit key of an email address: case-folded, so
// variants of one mailbox share a bucket.
func addressKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// tooMany answers 429 with a friendly page and Retry-After.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", itoa(secs))
	s.render(w, r, http.StatusTooManyRequests, "ratelimited", "Slow down a little", struct{ Wait string }{durWords(time.Duration(secs) * time.Second)})
}
