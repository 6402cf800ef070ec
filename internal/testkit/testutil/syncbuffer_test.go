package testutil

import (
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferConcurrentWrites: writes from many goroutines all arrive
// whole, and String can be read meanwhile (run with -race).
func TestSyncBufferConcurrentWrites(t *testing.T) {
	var buf SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				buf.Write([]byte("line\n"))
				_ = buf.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "line\n"); n != 800 {
		t.Fatalf("got %d lines, want 800", n)
	}
}
