package farm

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestIntervals drives two feeds with a fake clock and checks the
// histogram of the time between successive requests for the same feed,
// through Intervals and the stats endpoint, with recording off.
func TestIntervals(t *testing.T) {
	fm, clk := newFarm(t)
	fm.SetRecording(false)
	c := newClient(t)
	a := fm.AddFeed(Spec{ItemCount: 1, ETag: ETagStrong})
	b := fm.AddFeed(Spec{ItemCount: 1, Status: http.StatusGone})

	// a at 0, 5m, 10m30s, 10m30s (again at once), 3h later; b at 5m, 5m0.5s;
	// a page of a, the index and the stats themselves are not feed requests.
	steps := []struct {
		advance time.Duration
		feed    *Feed
	}{
		{0, a}, {5 * time.Minute, a}, {0, b}, {500 * time.Millisecond, b},
		{5*time.Minute + 29500*time.Millisecond, a}, {0, a}, {3 * time.Hour, a},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		get(t, c, s.feed.URL(), nil)
	}
	get(t, c, a.HomeURL(), nil)
	get(t, c, fm.URL()+"/", nil)

	iv := fm.Intervals()
	if len(iv.Counts) != len(iv.BoundsSeconds)+1 {
		t.Fatalf("%d counts for %d bounds", len(iv.Counts), len(iv.BoundsSeconds))
	}
	got := map[float64]int64{}
	for i, n := range iv.Counts {
		if n == 0 {
			continue
		}
		le := -1.0
		if i < len(iv.BoundsSeconds) {
			le = iv.BoundsSeconds[i]
		}
		got[le] = n
	}
	want := map[float64]int64{1: 2, 300: 1, 330: 1, 3 * 3600: 1}
	if len(got) != len(want) {
		t.Errorf("non-empty buckets %v, want %v", got, want)
	}
	for le, n := range want {
		if got[le] != n {
			t.Errorf("bucket ≤ %g s: %d, want %d (all: %v)", le, got[le], n, got)
		}
	}
	if iv.First != 2 {
		t.Errorf("first requests %d, want 2 (one per feed)", iv.First)
	}

	resp, body := get(t, c, fm.URL()+IntervalsPath, nil)
	var served Intervals
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &served) != nil {
		t.Fatalf("%s: %d\n%s", IntervalsPath, resp.StatusCode, body)
	}
	if served.First != iv.First || len(served.Counts) != len(iv.Counts) || served.Counts[0] != 2 {
		t.Errorf("served %+v, want %+v", served, iv)
	}
}

// TestIntervalBounds checks where an interval falls: a bucket holds what
// is above the bound before and up to its own.
func TestIntervalBounds(t *testing.T) {
	fm, clk := newFarm(t)
	f := fm.AddFeed(Spec{ItemCount: 1})
	iv := fm.iv
	tests := []struct {
		d  time.Duration
		le time.Duration // -1: above every bound
	}{
		{0, time.Second},
		{time.Second, time.Second},
		{time.Second + 1, 2 * time.Second},
		{61 * time.Second, 65 * time.Second},
		{5*time.Minute + 12*time.Second, 5*time.Minute + 15*time.Second},
		{10*time.Minute + 1, 11 * time.Minute},
		{90 * time.Minute, 2 * time.Hour},
		{25 * time.Hour, -1},
	}
	iv.observe(f, clk.Now())
	for _, tt := range tests {
		before := fm.Intervals().Counts
		clk.Advance(tt.d)
		iv.observe(f, clk.Now())
		after := fm.Intervals()
		for i := range after.Counts {
			le := time.Duration(-1)
			if i < len(intervalBounds) {
				le = intervalBounds[i]
			}
			if d := after.Counts[i] - before[i]; (d == 1) != (le == tt.le) {
				t.Errorf("%v: bucket ≤ %v changed by %d, want the one ≤ %v", tt.d, le, d, tt.le)
			}
		}
	}
}

func TestHubAdvertised(t *testing.T) {
	tests := []struct {
		share float64
		want  string // feeds 0..7: 1 advertises
	}{
		{0, "00000000"},
		{0.5, "01010101"},
		{0.25, "00010001"},
		{1, "11111111"},
		{0.75, "01110111"},
	}
	for _, tt := range tests {
		got := ""
		for i := range 8 {
			got += map[bool]string{false: "0", true: "1"}[HubAdvertised(i, tt.share)]
		}
		if got != tt.want {
			t.Errorf("share %v: %s, want %s", tt.share, got, tt.want)
		}
	}
}
