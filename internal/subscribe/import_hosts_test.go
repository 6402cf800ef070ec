package subscribe

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// hostProbe runs perHost jobs that hold until the gate opens, counting
// what runs at once, in all and per host.
type hostProbe struct {
	mu                sync.Mutex
	now, most         int
	hostNow, hostMost map[string]int
	ran               map[string]int
	started           chan struct{}
	gate              chan struct{}
	cancelAfter       int // cancel after this many starts (0: never)
	cancel            context.CancelFunc
	startedCount      int
}

func (p *hostProbe) do(url string) {
	h := store.HostOf(url)
	p.mu.Lock()
	p.now++
	p.most = max(p.most, p.now)
	p.hostNow[h]++
	p.hostMost[h] = max(p.hostMost[h], p.hostNow[h])
	p.ran[url]++
	p.startedCount++
	if p.startedCount == p.cancelAfter {
		p.cancel()
	}
	p.mu.Unlock()
	p.started <- struct{}{}
	<-p.gate
	p.mu.Lock()
	p.now--
	p.hostNow[h]--
	p.mu.Unlock()
}

// TestPerHost runs jobs on hosts told apart by name (a port does not make
// another host): every job runs once; in all and per host no more run at
// once than the limits; and as many as the limits allow do run at once
// (the jobs wait for each other to have started, so a scheduler that ran
// fewer would never finish).
func TestPerHost(t *testing.T) {
	cases := []struct {
		name        string
		hosts       map[string]int // host:port → jobs
		limit, most int
		wantAtOnce  int
	}{
		{name: "one host", hosts: map[string]int{"a.example": 20}, limit: 16, most: 2, wantAtOnce: 2},
		{name: "ports are one host", hosts: map[string]int{"a.example:81": 10, "a.example:82": 10, "A.example.:83": 5},
			limit: 16, most: 2, wantAtOnce: 2},
		{name: "many hosts, the limit in all", hosts: map[string]int{"a.example": 9, "b.example": 9, "c.example": 9,
			"d.example": 1, "e.example": 30}, limit: 6, most: 2, wantAtOnce: 6},
		{name: "many hosts, the limit per host", hosts: map[string]int{"a.example": 9, "b.example": 9, "c.example": 1},
			limit: 16, most: 3, wantAtOnce: 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var urls []string
			for h, n := range c.hosts {
				for i := range n {
					urls = append(urls, fmt.Sprintf("https://%s/feed/%d", h, i))
				}
			}
			p := &hostProbe{hostNow: map[string]int{}, hostMost: map[string]int{}, ran: map[string]int{},
				started: make(chan struct{}, len(urls)), gate: make(chan struct{})}
			done := make(chan []string)
			go func() {
				done <- perHost(context.Background(), urls, store.HostOf, c.limit, c.most, p.do)
			}()
			waitStarts(t, p.started, c.wantAtOnce)
			close(p.gate)
			left := <-done
			if len(left) != 0 {
				t.Errorf("%d jobs left, want none", len(left))
			}
			for _, u := range urls {
				if p.ran[u] != 1 {
					t.Errorf("%s ran %d times, want once", u, p.ran[u])
				}
			}
			if p.most != c.wantAtOnce {
				t.Errorf("at most %d at once, want %d", p.most, c.wantAtOnce)
			}
			for h, n := range p.hostMost {
				if n > c.most {
					t.Errorf("host %s: %d at once, want at most %d", h, n, c.most)
				}
			}
		})
	}
}

// TestPerHostStops: once ctx ends nothing more starts, what runs is waited
// for, and the jobs not started come back.
func TestPerHostStops(t *testing.T) {
	var urls []string
	for i := range 40 {
		urls = append(urls, fmt.Sprintf("https://h%d.example/feed", i%5))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &hostProbe{hostNow: map[string]int{}, hostMost: map[string]int{}, ran: map[string]int{},
		started: make(chan struct{}, len(urls)), gate: make(chan struct{}), cancelAfter: 4, cancel: cancel}
	done := make(chan []string)
	go func() { done <- perHost(ctx, urls, store.HostOf, 4, 1, p.do) }()
	waitStarts(t, p.started, 4)
	close(p.gate)
	left := <-done
	if p.startedCount != 4 || len(left) != len(urls)-4 {
		t.Errorf("%d started, %d left, want 4 and %d", p.startedCount, len(left), len(urls)-4)
	}
}

// waitStarts waits for n jobs to have started (generously: the machine
// may be busy).
func waitStarts(t *testing.T, started <-chan struct{}, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for i := range n {
		select {
		case <-started:
		case <-deadline:
			t.Fatalf("%d jobs started at once, want %d", i, n)
		}
	}
}
