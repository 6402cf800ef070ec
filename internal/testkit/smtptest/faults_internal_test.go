package smtptest

import (
	"math"
	"testing"
)

// TestDiceSequence: one seed gives one sequence of decisions, another seed
// another, and over many rolls each share is close to its setting.
func TestDiceSequence(t *testing.T) {
	const n = 100_000
	tests := []Faults{
		{Seed: 1, DropAfterDot: 0.005, TempFail: 0.02, Slow: 0.01},
		{Seed: 42, DropAfterDot: 0.3, TempFail: 0.3, Slow: 0.5},
		{Seed: 3, TempFail: 1},
	}
	for _, f := range tests {
		a, _ := newDice(f)
		b, _ := newDice(f)
		other := f
		other.Seed++
		c, _ := newDice(other)
		var drop, temp, slow, differ int
		for range n {
			ka, sa := a.roll()
			kb, sb := b.roll()
			kc, sc := c.roll()
			if ka != kb || sa != sb {
				t.Fatalf("seed %d: two dice differ", f.Seed)
			}
			if ka != kc || sa != sc {
				differ++
			}
			switch ka {
			case faultDrop:
				drop++
			case faultTempFail:
				temp++
			}
			if sa {
				slow++
			}
		}
		if differ == 0 && f.TempFail != 1 {
			t.Errorf("seed %d and %d give the same sequence", f.Seed, other.Seed)
		}
		for _, c := range []struct {
			name  string
			got   int
			share float64
		}{{"drop", drop, f.DropAfterDot}, {"451", temp, f.TempFail}, {"slow", slow, f.Slow}} {
			want := c.share * n
			if tol := 5*math.Sqrt(want) + 1; math.Abs(float64(c.got)-want) > tol {
				t.Errorf("%+v: %s %d of %d, want %.0f ± %.0f", f, c.name, c.got, n, want, tol)
			}
		}
	}
}

func TestNoFaultsNoDice(t *testing.T) {
	d, err := newDice(Faults{Seed: 9})
	if err != nil || d != nil {
		t.Fatalf("newDice(no shares) = %v, %v; want nil, nil", d, err)
	}
	if k, slow := d.roll(); k != faultNone || slow {
		t.Errorf("nil dice rolled %v %v", k, slow)
	}
}
