package poller

import (
	"context"
	"sync"
)

// slots counts free places for claimed feeds. One goroutine takes (the claim
// loop); any number put back.
type slots struct {
	mu      sync.Mutex
	free    int
	max     int
	changed chan struct{} // a put since the taker last looked
}

func newSlots(n int) *slots { return &slots{free: n, max: n, changed: make(chan struct{}, 1)} }

// take waits until at least low places are free (or ctx ends) and takes
// all that are free.
func (s *slots) take(ctx context.Context, low int) (int, error) {
	low = min(low, s.max)
	for {
		s.mu.Lock()
		if n := s.free; n >= low {
			s.free = 0
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// put gives n places back.
func (s *slots) put(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
