package smtptest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Faults make the server misbehave at random, reproducibly from Seed;
// shares are in [0,1] and DropAfterDot+TempFail must not exceed 1. Each
// message that reaches the end of its DATA gets one decision; the sequence
// of decisions is the same for one seed (which message gets which depends
// on the order messages arrive in). Per-recipient options (Stall,
// DropDuringData) come first.
type Faults struct {
	Seed int64
	// DropAfterDot: read the whole DATA including the final dot, then close
	// the connection with no reply (RFC 5321's duplicate window: the
	// client cannot know the message was received).
	DropAfterDot float64
	// TempFail: answer the message with "451 4.3.0" after its DATA.
	TempFail float64
	// Slow: delay what follows the message's DATA (the reply, or the
	// hang-up of DropAfterDot) by SlowBy.
	Slow   float64
	SlowBy time.Duration // default 5 s
}

// Received is one message the server took in full: accepted (250) or
// dropped after the dot.
type Received struct {
	From string
	To   []string
	Data []byte // the message as received; the callee may keep it
	At   time.Time
	// DroppedAfterDot: the reply never reached the client: the server
	// closed the connection instead (a fault it injected), or the client
	// had hung up by the time the server would have answered (ClientGone).
	DroppedAfterDot bool
}

// FaultCounts counts the faults injected since Start or Reset, and
// ClientGone the messages taken in full whose client had hung up before
// the reply (a sender killed while a slow server held its 250): SMTP's
// duplicate window from the sender's side, which the server cannot
// inject but a fault run must count beside DroppedAfterDot.
type FaultCounts struct{ DroppedAfterDot, TempFailed, Slowed, ClientGone int64 }

// fault is what happens to a message after its DATA.
type fault int

const (
	faultNone fault = iota
	faultDrop
	faultTempFail
)

// dice makes the fault decisions from one seeded source.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
	f  Faults
}

// newDice returns the decision maker for f, nil when f injects nothing,
// or an error for shares out of range.
func newDice(f Faults) (*dice, error) {
	for _, v := range []float64{f.DropAfterDot, f.TempFail, f.Slow} {
		if !(v >= 0 && v <= 1) { // NaN too
			return nil, fmt.Errorf("smtptest: fault share %v not in [0,1]", v)
		}
	}
	if f.DropAfterDot+f.TempFail > 1 {
		return nil, errors.New("smtptest: DropAfterDot+TempFail exceeds 1")
	}
	if f.SlowBy < 0 {
		return nil, errors.New("smtptest: negative SlowBy")
	}
	if f.DropAfterDot == 0 && f.TempFail == 0 && f.Slow == 0 {
		return nil, nil
	}
	if f.SlowBy == 0 {
		f.SlowBy = 5 * time.Second
	}
	seed := uint64(f.Seed)
	return &dice{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), f: f}, nil
}

// roll returns the fault for the next message and whether it is slowed.
// It draws exactly two numbers per call, so the sequence depends on the
// seed alone. A nil dice injects nothing.
func (d *dice) roll() (fault, bool) {
	if d == nil {
		return faultNone, false
	}
	d.mu.Lock()
	u, v := d.r.Float64(), d.r.Float64()
	d.mu.Unlock()
	kind := faultNone
	switch {
	case u < d.f.DropAfterDot:
		kind = faultDrop
	case u < d.f.DropAfterDot+d.f.TempFail:
		kind = faultTempFail
	}
	return kind, v < d.f.Slow
}

// faultCounters are the server's FaultCounts, updated without its lock.
type faultCounters struct{ dropped, tempFailed, slowed, clientGone atomic.Int64 }

// FaultCounts returns how many faults were injected since Start or Reset.
func (s *Server) FaultCounts() FaultCounts {
	return FaultCounts{
		DroppedAfterDot: s.faultN.dropped.Load(),
		TempFailed:      s.faultN.tempFailed.Load(),
		Slowed:          s.faultN.slowed.Load(),
		ClientGone:      s.faultN.clientGone.Load(),
	}
}

// observe hands a message taken in full to Options.Observe, if set.
func (s *Server) observe(from string, to []string, data []byte, dropped bool) {
	if s.opts.Observe == nil {
		return
	}
	s.opts.Observe(Received{From: from, To: append([]string(nil), to...), Data: data,
		At: time.Now(), DroppedAfterDot: dropped})
}

// slow waits SlowBy, or less when the server closes.
func (s *Server) slow() {
	s.faultN.slowed.Add(1)
	t := time.NewTimer(s.dice.f.SlowBy)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done:
	}
}
