package farm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FaultsPath answers GET with the FaultCounts as JSON.
const FaultsPath = "/_farm/faults"

// Faults make feed document requests fail at random, reproducibly from
// Seed: each request independently gets a TCP reset, a hang, a 500, or
// its normal answer. Shares are in [0,1] and sum to at most 1.
type Faults struct {
	Seed      int64
	Reset     float64 // close the connection with a TCP RST before any answer
	Timeout   float64 // answer nothing until the client gives up (at most MaxHang), then close
	Status500 float64 // answer 500 with a short body
	MaxHang   time.Duration
}

// defaultMaxHang bounds a Timeout hang when Faults.MaxHang is 0.
const defaultMaxHang = 2 * time.Minute

// FaultCounts counts the faults injected since SetFaults.
type FaultCounts struct {
	Requests  int64 `json:"requests"` // feed document requests that drew a decision
	Reset     int64 `json:"reset"`
	Timeout   int64 `json:"timeout"`
	Status500 int64 `json:"status_500"`
}

// farmFault is what a feed request gets instead of its answer.
type farmFault int

const (
	noFault farmFault = iota
	faultReset
	faultTimeout
	fault500
)

// faultDice draws the decisions from one seeded source and counts them.
type faultDice struct {
	f  Faults
	mu sync.Mutex
	r  *rand.Rand

	requests, reset, timeout, status500 atomic.Int64
}

// newFaultDice returns the decision maker for f, or an error for shares
// out of range.
func newFaultDice(f Faults) (*faultDice, error) {
	for _, v := range []float64{f.Reset, f.Timeout, f.Status500} {
		if !(v >= 0 && v <= 1) { // NaN too
			return nil, fmt.Errorf("farm: fault share %v not in [0,1]", v)
		}
	}
	if f.Reset+f.Timeout+f.Status500 > 1 {
		return nil, errors.New("farm: fault shares sum to more than 1")
	}
	if f.MaxHang < 0 {
		return nil, errors.New("farm: negative MaxHang")
	}
	if f.MaxHang == 0 {
		f.MaxHang = defaultMaxHang
	}
	seed := uint64(f.Seed)
	return &faultDice{f: f, r: rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))}, nil
}

// roll returns the fault for the next request (one draw per call, so the
// sequence depends on the seed alone) and counts it.
func (d *faultDice) roll() farmFault {
	d.mu.Lock()
	u := d.r.Float64()
	d.mu.Unlock()
	d.requests.Add(1)
	switch {
	case u < d.f.Reset:
		d.reset.Add(1)
		return faultReset
	case u < d.f.Reset+d.f.Timeout:
		d.timeout.Add(1)
		return faultTimeout
	case u < d.f.Reset+d.f.Timeout+d.f.Status500:
		d.status500.Add(1)
		return fault500
	}
	return noFault
}

// SetFaults replaces the fault settings and zeroes the counts; a zero
// Faults turns them off. It fails on shares out of range.
func (fm *Farm) SetFaults(f Faults) error {
	if f.Reset == 0 && f.Timeout == 0 && f.Status500 == 0 {
		fm.faults.Store(nil)
		return nil
	}
	d, err := newFaultDice(f)
	if err != nil {
		return err
	}
	fm.faults.Store(d)
	return nil
}

// FaultCounts returns the faults injected since the last SetFaults (zero
// when none are set).
func (fm *Farm) FaultCounts() FaultCounts {
	d := fm.faults.Load()
	if d == nil {
		return FaultCounts{}
	}
	return FaultCounts{Requests: d.requests.Load(), Reset: d.reset.Load(),
		Timeout: d.timeout.Load(), Status500: d.status500.Load()}
}

// serveFault answers a feed request with the fault drawn for it; false
// when it drew none and the request must be answered normally. The
// request is recorded with status 0 (no answer) or 500.
func (f *Feed) serveFault(w http.ResponseWriter, r *http.Request, rec Record) bool {
	d := f.farm.faults.Load()
	if d == nil {
		return false
	}
	switch d.roll() {
	case faultReset:
		f.record(rec)
		hostileReset(w)
	case faultTimeout:
		f.record(rec)
		if f.farm.track() {
			defer f.farm.running.Done()
			wait(r.Context(), d.f.MaxHang)
		}
		hostileReset(w) // never an empty 200
	case fault500:
		rec.Status = http.StatusInternalServerError
		f.record(rec)
		body := []byte("500 injected fault\n")
		h := w.Header()
		h["Date"] = f.farm.httpDate(f.farm.clk.Now())
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(body)
	default:
		return false
	}
	return true
}

// serveFaultCounts answers GET FaultsPath with FaultCounts as JSON. It is
// not a feed request: it is neither recorded nor counted.
func (fm *Farm) serveFaultCounts(w http.ResponseWriter) {
	b, err := json.Marshal(fm.FaultCounts())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeSimple(w, fm.httpDate(fm.clk.Now()), http.StatusOK, "application/json", b)
}
