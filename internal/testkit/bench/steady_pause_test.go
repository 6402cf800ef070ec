package bench

import (
	"math"
	"testing"
	"time"
)

func TestPollOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name     string
		v        []dueFirst
		corr     float64
		outOfOrd float64
	}{
		{"oldest first", []dueFirst{{at(0), at(100)}, {at(10), at(101)}, {at(20), at(102)}, {at(30), at(103)}}, 1, 0},
		{"youngest first", []dueFirst{{at(0), at(103)}, {at(10), at(102)}, {at(20), at(101)}, {at(30), at(100)}}, -1, 0.75},
		{"same second counts as in order", []dueFirst{{at(0), at(100)}, {at(10), at(100)}, {at(20), at(101)}, {at(30), at(101)}}, 0.894, 0},
		{"an older feed still waiting", []dueFirst{{at(0), time.Time{}}, {at(10), at(100)}, {at(20), at(101)}}, 1, 1},
		{"nothing polled", []dueFirst{{at(0), time.Time{}}}, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			corr, late := pollOrder(tt.v)
			if math.Abs(corr-tt.corr) > 0.001 || math.Abs(late-tt.outOfOrd) > 1e-9 {
				t.Errorf("pollOrder = %.3f, %.3f; want %.3f, %.3f", corr, late, tt.corr, tt.outOfOrd)
			}
		})
	}
}
