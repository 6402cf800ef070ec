package hooksink

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
)

// fault is what a request gets instead of its normal answer.
type fault int

const (
	noFault fault = iota
	fault500
	faultTimeout
)

// dice draws one decision per request from one seeded source.
type dice struct {
	mu               sync.Mutex
	r                *rand.Rand
	fail500, timeout float64
}

// newDice returns the decision maker for the shares, or an error for
// shares out of range.
func newDice(seed int64, fail500, timeout float64) (*dice, error) {
	for _, v := range []float64{fail500, timeout} {
		if !(v >= 0 && v <= 1) { // NaN too
			return nil, fmt.Errorf("hooksink: fault share %v not in [0,1]", v)
		}
	}
	if fail500+timeout > 1 {
		return nil, errors.New("hooksink: Fail500+Timeout exceeds 1")
	}
	s := uint64(seed)
	return &dice{r: rand.New(rand.NewPCG(s, s^0xbb67ae8584caa73b)), fail500: fail500, timeout: timeout}, nil
}

// roll returns the fault of the next request: one draw per call, so the
// sequence depends on the seed alone.
func (d *dice) roll() fault {
	d.mu.Lock()
	u := d.r.Float64()
	d.mu.Unlock()
	switch {
	case u < d.fail500:
		return fault500
	case u < d.fail500+d.timeout:
		return faultTimeout
	}
	return noFault
}
