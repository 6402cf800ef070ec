package digest

import (
	"testing"
	"time"
)

// TestSetDefault: an unset (zero or negative) config field takes the
// default, a set one keeps its value.
func TestSetDefault(t *testing.T) {
	n, neg, set := 0, -3, 7
	setDefault(&n, 5)
	setDefault(&neg, 5)
	setDefault(&set, 5)
	if n != 5 || neg != 5 || set != 7 {
		t.Errorf("ints: got %d %d %d, want 5 5 7", n, neg, set)
	}
	var d time.Duration
	setDefault(&d, time.Minute)
	if d != time.Minute {
		t.Errorf("duration: got %v", d)
	}
}
