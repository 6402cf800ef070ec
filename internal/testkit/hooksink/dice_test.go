package hooksink

import (
	"math"
	"testing"
)

// TestDiceSequence: one seed gives one sequence, another seed another, and
// over many rolls each share is close to its setting.
func TestDiceSequence(t *testing.T) {
	const n = 100_000
	for _, tc := range []struct {
		seed             int64
		fail500, timeout float64
	}{{1, 0.02, 0.02}, {7, 0.5, 0.25}, {9, 0, 1}} {
		a, _ := newDice(tc.seed, tc.fail500, tc.timeout)
		b, _ := newDice(tc.seed, tc.fail500, tc.timeout)
		c, _ := newDice(tc.seed+1, tc.fail500, tc.timeout)
		var f500, fto, differ int
		for range n {
			x := a.roll()
			if x != b.roll() {
				t.Fatalf("seed %d: two dice differ", tc.seed)
			}
			if x != c.roll() {
				differ++
			}
			switch x {
			case fault500:
				f500++
			case faultTimeout:
				fto++
			}
		}
		if differ == 0 && tc.timeout != 1 {
			t.Errorf("seeds %d and %d give the same sequence", tc.seed, tc.seed+1)
		}
		for _, x := range []struct {
			got   int
			share float64
		}{{f500, tc.fail500}, {fto, tc.timeout}} {
			want := x.share * n
			if tol := 5*math.Sqrt(want) + 1; math.Abs(float64(x.got)-want) > tol {
				t.Errorf("seed %d: %d of %d, want %.0f ± %.0f", tc.seed, x.got, n, want, tol)
			}
		}
	}
}
