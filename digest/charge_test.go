package digest

import (
	"math"
	"testing"
)

func TestCharge(t *testing.T) {
	tests := []struct {
		feeds, want int
	}{
		{0, 0}, {-3, 0}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 2}, {10, 2},
		{11, 3}, {14, 3}, {15, 3}, {16, 4}, {100, 20}, {101, 21},
		{math.MaxInt, math.MaxInt/5 + 1}, // no overflow near the top
	}
	for _, tt := range tests {
		if got := Charge(tt.feeds); got != tt.want {
			t.Errorf("Charge(%d) = %d, want %d", tt.feeds, got, tt.want)
		}
	}
}
