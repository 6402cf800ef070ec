package farm

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// IntervalsPath is where a farm serves its Intervals as JSON.
const IntervalsPath = "/_stats/intervals"

// intervalBounds are the upper bounds of the interval histogram's buckets:
// every second up to a minute, every 5 s up to 10 min (a poller's usual
// cadences), every minute up to an hour, every hour up to a day.
var intervalBounds = func() []time.Duration {
	var b []time.Duration
	for d := time.Second; d <= time.Minute; d += time.Second {
		b = append(b, d)
	}
	for d := time.Minute + 5*time.Second; d <= 10*time.Minute; d += 5 * time.Second {
		b = append(b, d)
	}
	for d := 11 * time.Minute; d <= time.Hour; d += time.Minute {
		b = append(b, d)
	}
	for d := 2 * time.Hour; d <= 24*time.Hour; d += time.Hour {
		b = append(b, d)
	}
	return b
}()

// intervals counts the time between successive requests for the same
// feed document: counts[i] those up to intervalBounds[i] (and above the
// bound before), the last one those above every bound.
type intervals struct {
	counts []atomic.Int64
	first  atomic.Int64 // requests that were a feed's first: no interval
}

func newIntervals() *intervals {
	return &intervals{counts: make([]atomic.Int64, len(intervalBounds)+1)}
}

// observe notes a request for f at now (farm clock): one atomic swap per
// request and one count.
func (iv *intervals) observe(f *Feed, now time.Time) {
	prev := f.last.Swap(now.UnixNano())
	if prev == 0 {
		iv.first.Add(1)
		return
	}
	d := time.Duration(now.UnixNano() - prev)
	i, _ := slices.BinarySearch(intervalBounds, d)
	iv.counts[i].Add(1)
}

// Intervals is the farm's histogram of the time between successive
// requests for the same feed document (farm clock), as a publisher would
// read it in their logs: what a poller's cadence looks like from outside.
type Intervals struct {
	// BoundsSeconds are the buckets' upper bounds; Counts has one more
	// entry, the requests that came longer than the last bound after the
	// one before.
	BoundsSeconds []float64 `json:"bounds_s"`
	Counts        []int64   `json:"counts"`
	// First counts requests that were the first for their feed.
	First int64 `json:"first"`
}

// Intervals returns the histogram so far (since the farm started; Reset
// does not clear it).
func (fm *Farm) Intervals() Intervals {
	out := Intervals{
		BoundsSeconds: make([]float64, len(intervalBounds)),
		Counts:        make([]int64, len(fm.iv.counts)),
		First:         fm.iv.first.Load(),
	}
	for i, b := range intervalBounds {
		out.BoundsSeconds[i] = b.Seconds()
	}
	for i := range fm.iv.counts {
		out.Counts[i] = fm.iv.counts[i].Load()
	}
	return out
}

// serveIntervals answers GET IntervalsPath with Intervals as JSON. It is
// not a feed request: it is neither recorded nor counted.
func (fm *Farm) serveIntervals(w http.ResponseWriter) {
	b, err := json.Marshal(fm.Intervals())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeSimple(w, fm.httpDate(fm.clk.Now()), http.StatusOK, "application/json", b)
}
