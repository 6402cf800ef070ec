package worker

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	n, neg, set := 0, -3, 7
	Default(&n, 5)
	Default(&neg, 5)
	Default(&set, 5)
	if n != 5 || neg != 5 || set != 7 {
		t.Errorf("ints: got %d %d %d, want 5 5 7", n, neg, set)
	}
	var d time.Duration
	Default(&d, time.Minute)
	if d != time.Minute {
		t.Errorf("duration: got %v", d)
	}
}
