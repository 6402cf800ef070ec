package bench

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFrontFailsOver: the callback front forwards to the next serve and,
// when one cannot be connected to (killed), to the one after; with none
// up it answers 502 so that the hub retries.
func TestFrontFailsOver(t *testing.T) {
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", r.URL.RequestURI())
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(b)
	}))
	defer live.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there: a killed serve
	f, err := startFront()
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	liveAddr := strings.TrimPrefix(live.URL, "http://")
	tests := []struct {
		name       string
		backends   []string
		wantStatus int
		wantBody   string
	}{
		{"live first", []string{liveAddr, dead}, http.StatusAccepted, "push"},
		{"dead first: next", []string{dead, liveAddr}, http.StatusAccepted, "push"},
		{"all dead: 502", []string{dead, dead}, http.StatusBadGateway, "no serve answered\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.setBackends(tt.backends)
			f.next = 0
			resp, err := http.Post("http://"+f.addr+"/websub/x?a=1", "text/plain", strings.NewReader("push"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || string(b) != tt.wantBody {
				t.Errorf("answered %d %q, want %d %q", resp.StatusCode, b, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus == http.StatusAccepted && resp.Header.Get("X-Got") != "/websub/x?a=1" {
				t.Errorf("serve got %q, want the path and query", resp.Header.Get("X-Got"))
			}
		})
	}
	if f.failedOver.Load() != 3 || f.failed.Load() != 1 || f.forwarded.Load() != 2 {
		t.Errorf("front counted %d failed over, %d failed, %d forwarded; want 3, 1, 2", f.failedOver.Load(), f.failed.Load(), f.forwarded.Load())
	}
}
