package farm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestFaultsSeenByClient: each fault, forced with share 1, is what an HTTP
// client sees, is recorded, and is counted (also at FaultsPath).
func TestFaultsSeenByClient(t *testing.T) {
	tests := []struct {
		name       string
		faults     Faults
		timeout    time.Duration // client timeout; 0: none
		wantStatus int           // 0: a connection error
		wantCounts FaultCounts
		minElapsed time.Duration
	}{
		{name: "reset", faults: Faults{Reset: 1}, wantCounts: FaultCounts{Requests: 1, Reset: 1}},
		{name: "timeout: client gives up", faults: Faults{Timeout: 1}, timeout: 200 * time.Millisecond,
			wantCounts: FaultCounts{Requests: 1, Timeout: 1}, minElapsed: 200 * time.Millisecond},
		{name: "timeout: farm gives up", faults: Faults{Timeout: 1, MaxHang: 150 * time.Millisecond},
			wantCounts: FaultCounts{Requests: 1, Timeout: 1}, minElapsed: 150 * time.Millisecond},
		{name: "500", faults: Faults{Status500: 1}, wantStatus: 500, wantCounts: FaultCounts{Requests: 1, Status500: 1}},
		{name: "none", wantStatus: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fm, _ := newFarm(t)
			f := fm.AddFeed(Spec{ItemCount: 1})
			if err := fm.SetFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			c := newClient(t)
			c.Timeout = tc.timeout
			began := time.Now()
			resp, err := c.Get(f.URL())
			elapsed := time.Since(began)
			status, body := 0, ""
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, body = resp.StatusCode, string(b)
			}
			if status != tc.wantStatus {
				t.Fatalf("status %d (err %v), want %d", status, err, tc.wantStatus)
			}
			var ne net.Error
			if tc.timeout > 0 && !(errors.As(err, &ne) && ne.Timeout()) {
				t.Errorf("error %v, want the client's timeout", err)
			}
			if status == 500 && body != "500 injected fault\n" {
				t.Errorf("body %q", body)
			}
			if elapsed < tc.minElapsed {
				t.Errorf("answered after %s, want at least %s", elapsed, tc.minElapsed)
			}
			if r := fm.RequestsFor(f); len(r) != 1 || r[0].Status != tc.wantStatus {
				t.Errorf("records %+v, want one with status %d", r, tc.wantStatus)
			}
			checkCounts(t, fm, tc.wantCounts)
		})
	}
}

// checkCounts compares FaultCounts and the JSON at FaultsPath with want.
func checkCounts(t *testing.T, fm *Farm, want FaultCounts) {
	t.Helper()
	if got := fm.FaultCounts(); got != want {
		t.Errorf("FaultCounts = %+v, want %+v", got, want)
	}
	_, b := get(t, newClient(t), fm.URL()+FaultsPath, nil)
	var got FaultCounts
	if err := json.Unmarshal(b, &got); err != nil || got != want {
		t.Errorf("%s = %s (%v), want %+v", FaultsPath, b, err, want)
	}
}

// TestFaultShares: over 10,000 requests each fault comes close to its
// share, the same seed gives the same counts, and what the handler
// answered agrees with the counts.
func TestFaultShares(t *testing.T) {
	const n = 10_000
	faults := Faults{Seed: 11, Reset: 0.01, Timeout: 0.01, Status500: 0.01}
	run := func() (FaultCounts, int) {
		fm, _ := newFarm(t)
		fm.SetRecording(false)
		f := fm.AddFeed(Spec{ItemCount: 1})
		if err := fm.SetFaults(faults); err != nil {
			t.Fatal(err)
		}
		// A client already gone: a timeout returns at once.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, f.Path(), nil)
		var got500 int
		for range n {
			w := httptest.NewRecorder()
			fm.ServeHTTP(w, req)
			if w.Code == 500 {
				got500++
			}
		}
		return fm.FaultCounts(), got500
	}
	a, got500 := run()
	if b, _ := run(); a != b {
		t.Errorf("same seed, different counts: %+v and %+v", a, b)
	}
	if a.Requests != n || int(a.Status500) != got500 {
		t.Errorf("counts %+v; %d answers were 500", a, got500)
	}
	for _, c := range []struct {
		name  string
		got   int64
		share float64
	}{{"reset", a.Reset, faults.Reset}, {"timeout", a.Timeout, faults.Timeout}, {"500", a.Status500, faults.Status500}} {
		want := c.share * n
		if tol := 5 * math.Sqrt(want); math.Abs(float64(c.got)-want) > tol {
			t.Errorf("%s: %d of %d, want %.0f ± %.0f", c.name, c.got, n, want, tol)
		}
	}
}

func TestSetFaults(t *testing.T) {
	fm, _ := newFarm(t)
	for _, f := range []Faults{{Reset: -0.1}, {Timeout: 2}, {Reset: 0.5, Timeout: 0.3, Status500: 0.3}, {Reset: 0.1, MaxHang: -1}} {
		if err := fm.SetFaults(f); err == nil {
			t.Errorf("SetFaults(%+v) accepted", f)
		}
	}
	if err := fm.SetFaults(Faults{Status500: 1}); err != nil {
		t.Fatal(err)
	}
	f := fm.AddFeed(Spec{ItemCount: 1})
	c := newClient(t)
	if resp, _ := get(t, c, f.URL(), nil); resp.StatusCode != 500 {
		t.Fatalf("status %d with faults on", resp.StatusCode)
	}
	if err := fm.SetFaults(Faults{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, f.URL(), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d with faults off", resp.StatusCode)
	}
	checkCounts(t, fm, FaultCounts{})
}

func TestHandleControl(t *testing.T) {
	fm, _ := newFarm(t)
	fm.HandleControl(ControlPrefix+"hello", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hi "+r.URL.Query().Get("n"))
	}))
	c := newClient(t)
	if resp, b := get(t, c, fm.URL()+ControlPrefix+"hello?n=1", nil); resp.StatusCode != 200 || string(b) != "hi 1" {
		t.Errorf("control: %d %q", resp.StatusCode, b)
	}
	if resp, _ := get(t, c, fm.URL()+ControlPrefix+"nothing", nil); resp.StatusCode != 404 {
		t.Errorf("unknown control: %d", resp.StatusCode)
	}
	if r := fm.Requests(); len(r) != 1 || r[0].Path != ControlPrefix+"nothing" {
		t.Errorf("records %+v, want only the unknown path", r)
	}
}
