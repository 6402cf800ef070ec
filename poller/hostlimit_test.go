package poller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
)

// waitingLimiter returns a limiter whose Acquire calls announce on the
// returned channel when they start to wait.
func waitingLimiter(t *testing.T, max int) (*HostLimiter, chan string) {
	t.Helper()
	l := NewHostLimiter(max, clock.NewFake(testNow))
	waiting := make(chan string, 64)
	l.onWait = func(host string) { waiting <- host }
	return l, waiting
}

type acquired struct {
	release func()
	err     error
}

// acquireAsync calls Acquire in a goroutine and delivers its result.
func acquireAsync(ctx context.Context, l *HostLimiter, host string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		rel, err := l.Acquire(ctx, host)
		ch <- acquired{rel, err}
	}()
	return ch
}

func mustAcquire(t *testing.T, l *HostLimiter, host string) func() {
	t.Helper()
	rel, err := l.Acquire(context.Background(), host)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", host, err)
	}
	return rel
}

func TestNewHostLimiterDefaults(t *testing.T) {
	tests := []struct {
		max, want int
	}{{0, MaxInFlightPerHost}, {-1, MaxInFlightPerHost}, {1, 1}, {2, 2}, {5, 5}}
	for _, tt := range tests {
		l := NewHostLimiter(tt.max, nil)
		if l.max != tt.want {
			t.Errorf("NewHostLimiter(%d).max = %d; want %d", tt.max, l.max, tt.want)
		}
		if _, ok := l.clk.(clock.Real); !ok {
			t.Errorf("nil clock should become clock.Real, got %T", l.clk)
		}
	}
}

func TestHostLimiterBlocksAtMax(t *testing.T) {
	l, waiting := waitingLimiter(t, 2)
	ctx := context.Background()

	r1 := mustAcquire(t, l, "example.com")
	r2 := mustAcquire(t, l, "EXAMPLE.com.") // same host, other spelling
	if got := l.InFlight("example.com"); got != 2 {
		t.Fatalf("InFlight = %d; want 2", got)
	}
	// Another host is not affected.
	rOther := mustAcquire(t, l, "other.example")

	third := acquireAsync(ctx, l, "Example.com")
	if h := <-waiting; h != "example.com" {
		t.Fatalf("waiting on %q; want example.com", h)
	}
	select {
	case a := <-third:
		t.Fatalf("third Acquire returned (%v) while 2 were in flight", a.err)
	default:
	}

	r1()
	a := <-third
	if a.err != nil {
		t.Fatalf("third Acquire: %v", a.err)
	}
	if got := l.InFlight("example.com"); got != 2 {
		t.Fatalf("InFlight after hand-over = %d; want 2", got)
	}

	// Release is idempotent: a second call frees nothing more.
	r1()
	if got := l.InFlight("example.com"); got != 2 {
		t.Fatalf("InFlight after double release = %d; want 2", got)
	}

	r2()
	a.release()
	rOther()
	if got := l.InFlight("example.com"); got != 0 {
		t.Fatalf("InFlight at the end = %d; want 0", got)
	}
	l.mu.Lock()
	n := len(l.hosts)
	l.mu.Unlock()
	if n != 0 {
		t.Errorf("limiter keeps %d idle hosts; want 0", n)
	}
}

func TestHostLimiterFIFO(t *testing.T) {
	l, waiting := waitingLimiter(t, 1)
	ctx := context.Background()
	rel := mustAcquire(t, l, "h")

	const n = 5
	results := make([]<-chan acquired, n)
	for i := range results {
		results[i] = acquireAsync(ctx, l, "h")
		<-waiting // i is queued before i+1 starts
	}
	for i := range results {
		rel()
		a := <-results[i]
		if a.err != nil {
			t.Fatalf("waiter %d: %v", i, a.err)
		}
		// Nobody else got through.
		for j := i + 1; j < n; j++ {
			select {
			case <-results[j]:
				t.Fatalf("waiter %d served before waiter %d released", j, i)
			default:
			}
		}
		rel = a.release
	}
	rel()
	if got := l.InFlight("h"); got != 0 {
		t.Errorf("InFlight = %d; want 0", got)
	}
}

func TestHostLimiterContext(t *testing.T) {
	t.Run("already cancelled fails even with a free slot", func(t *testing.T) {
		l, _ := waitingLimiter(t, 2)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rel, err := l.Acquire(ctx, "h")
		if !errors.Is(err, context.Canceled) || rel != nil {
			t.Fatalf("Acquire = %v, %v; want nil, context.Canceled", rel != nil, err)
		}
		if got := l.InFlight("h"); got != 0 {
			t.Errorf("InFlight = %d; want 0", got)
		}
	})

	t.Run("cancel while waiting", func(t *testing.T) {
		l, waiting := waitingLimiter(t, 1)
		held := mustAcquire(t, l, "h")
		ctx, cancel := context.WithCancel(context.Background())
		res := acquireAsync(ctx, l, "h")
		<-waiting
		cancel()
		a := <-res
		if !errors.Is(a.err, context.Canceled) || a.release != nil {
			t.Fatalf("Acquire = %v, %v; want nil, context.Canceled", a.release != nil, a.err)
		}
		// The cancelled waiter left the queue: the next one gets the slot.
		next := acquireAsync(context.Background(), l, "h")
		<-waiting
		held()
		b := <-next
		if b.err != nil {
			t.Fatalf("next Acquire: %v", b.err)
		}
		b.release()
		if got := l.InFlight("h"); got != 0 {
			t.Errorf("InFlight = %d; want 0", got)
		}
	})

	// Cancel and hand-over race: whichever wins, no slot may leak.
	t.Run("cancel racing a release", func(t *testing.T) {
		for i := 0; i < 200; i++ {
			l, waiting := waitingLimiter(t, 1)
			held := mustAcquire(t, l, "h")
			ctx, cancel := context.WithCancel(context.Background())
			res := acquireAsync(ctx, l, "h")
			<-waiting
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); cancel() }()
			go func() { defer wg.Done(); held() }()
			wg.Wait()
			if a := <-res; a.err == nil {
				a.release()
			}
			if got := l.InFlight("h"); got != 0 {
				t.Fatalf("iteration %d: InFlight = %d; want 0", i, got)
			}
		}
	})
}

func TestHostLimiterConcurrent(t *testing.T) {
	const maxInFlight, workers, rounds = 2, 16, 50
	l := NewHostLimiter(maxInFlight, clock.NewFake(testNow))
	hosts := []string{"a.example", "b.example", "c.example"}
	var cur [3]atomic.Int32
	var peak [3]atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				hi := (w + i) % len(hosts)
				rel, err := l.Acquire(context.Background(), hosts[hi])
				if err != nil {
					t.Error(err)
					return
				}
				n := cur[hi].Add(1)
				for {
					p := peak[hi].Load()
					if n <= p || peak[hi].CompareAndSwap(p, n) {
						break
					}
				}
				cur[hi].Add(-1)
				rel()
			}
		}()
	}
	wg.Wait()
	for i, h := range hosts {
		if p := peak[i].Load(); p > maxInFlight {
			t.Errorf("%s: %d requests in flight at once; want ≤ %d", h, p, maxInFlight)
		}
		if got := l.InFlight(h); got != 0 {
			t.Errorf("%s: InFlight = %d at the end", h, got)
		}
	}
}

func TestHostLimiterBackOff(t *testing.T) {
	type step struct {
		advance   time.Duration // move the clock first
		backOff   time.Duration // then BackOff(host, now+backOff, reason) when non-zero
		reason    string
		host      string // "" means "example.com"
		wantUntil time.Duration
		wantWhy   string
		wantOK    bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"not backed off", []step{{}}},
		{"backed off until Retry-After", []step{
			{backOff: 2 * time.Minute, reason: "429: Retry-After 120 s", wantUntil: 2 * time.Minute, wantWhy: "429: Retry-After 120 s", wantOK: true},
			{advance: time.Minute, wantUntil: time.Minute, wantWhy: "429: Retry-After 120 s", wantOK: true},
			{advance: time.Minute}, // exactly at until: over
		}},
		{"whole host, any spelling", []step{
			{backOff: time.Hour, reason: "429", host: "Example.COM.", wantUntil: time.Hour, wantWhy: "429", wantOK: true},
			{host: "example.com", wantUntil: time.Hour, wantWhy: "429", wantOK: true},
			{host: "other.example"},
		}},
		{"a shorter back-off does not shorten", []step{
			{backOff: time.Hour, reason: "429 long", wantUntil: time.Hour, wantWhy: "429 long", wantOK: true},
			{backOff: time.Minute, reason: "429 short", wantUntil: time.Hour, wantWhy: "429 long", wantOK: true},
		}},
		{"a longer back-off extends", []step{
			{backOff: time.Minute, reason: "429 short", wantUntil: time.Minute, wantWhy: "429 short", wantOK: true},
			{backOff: time.Hour, reason: "503 maintenance", wantUntil: time.Hour, wantWhy: "503 maintenance", wantOK: true},
		}},
		{"past or present until is ignored", []step{
			{backOff: -time.Minute, reason: "stale"},
			{backOff: 0, reason: "now"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(testNow)
			l := NewHostLimiter(2, clk)
			for i, s := range tt.steps {
				now := clk.Advance(s.advance)
				host := s.host
				if host == "" {
					host = "example.com"
				}
				if s.backOff != 0 || s.reason != "" {
					l.BackOff(host, now.Add(s.backOff), s.reason)
				}
				until, why, ok := l.BackedOff(host)
				var wantUntil time.Time
				if s.wantOK {
					wantUntil = now.Add(s.wantUntil)
				}
				if ok != s.wantOK || why != s.wantWhy || !until.Equal(wantUntil) {
					t.Errorf("step %d: BackedOff(%q) = %v, %q, %v; want %v, %q, %v", i, host, until, why, ok, wantUntil, s.wantWhy, s.wantOK)
				}
			}
		})
	}
}

func TestHostLimiterForgetsEndedBackOffs(t *testing.T) {
	clk := clock.NewFake(testNow)
	l := NewHostLimiter(2, clk)
	l.BackOff("a.example", testNow.Add(time.Minute), "429")
	l.BackOff("b.example", testNow.Add(time.Hour), "429")
	clk.Advance(2 * time.Minute)
	// a.example is never asked about again; the next BackOff sweeps it.
	l.BackOff("c.example", clk.Now().Add(time.Minute), "429")
	l.mu.Lock()
	_, hasA := l.hosts["a.example"]
	n := len(l.hosts)
	l.mu.Unlock()
	if hasA || n != 2 {
		t.Errorf("after the sweep: a.example kept = %v, %d hosts; want false, 2", hasA, n)
	}
	// A back-off does not block Acquire: callers check BackedOff themselves.
	rel := mustAcquire(t, l, "b.example")
	rel()
	if _, _, ok := l.BackedOff("b.example"); !ok {
		t.Error("release dropped a running back-off")
	}
}

// TryAcquire takes a free slot at once, refuses when the host is full or
// someone waits (so it never jumps the queue), and its release frees or
// hands over the slot like Acquire's.
func TestHostLimiterTryAcquire(t *testing.T) {
	l, waiting := waitingLimiter(t, 2)
	r1, ok := l.TryAcquire("example.com")
	if !ok {
		t.Fatal("TryAcquire on an idle host failed")
	}
	r2, ok := l.TryAcquire("EXAMPLE.com.")
	if !ok {
		t.Fatal("second TryAcquire under the limit failed")
	}
	if _, ok := l.TryAcquire("example.com"); ok {
		t.Fatal("TryAcquire succeeded with 2 in flight")
	}
	if got := l.InFlight("example.com"); got != 2 {
		t.Fatalf("InFlight = %d; want 2", got)
	}
	third := acquireAsync(context.Background(), l, "example.com")
	<-waiting
	r1()
	a := <-third
	if a.err != nil {
		t.Fatalf("waiting Acquire: %v", a.err)
	}
	// A waiter queued behind a full host is served before TryAcquire.
	fourth := acquireAsync(context.Background(), l, "example.com")
	<-waiting
	if _, ok := l.TryAcquire("example.com"); ok {
		t.Fatal("TryAcquire took a slot of a full host with a waiter")
	}
	r2()
	b := <-fourth
	if b.err != nil {
		t.Fatalf("queued Acquire: %v", b.err)
	}
	a.release()
	b.release()
	if got := l.InFlight("example.com"); got != 0 {
		t.Fatalf("InFlight at the end = %d; want 0", got)
	}
}
