package farm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The load driver measures what a feedfarm process costs a benchmark: it
// builds and starts cmd/feedfarm as the steady benchmark does, reads its
// RSS, learns the ETags of the feeds it will poll, then sends a paced load
// of poller-like requests on two keep-alive connections — a conditional
// GET with the current ETag for LOAD_COND of them, a plain GET accepting
// gzip for the rest — and reports the farm's CPU (utime + stime from
// /proc) and allocations (runtime memstats over -pprof) per request.
// With FARM_LOAD_TARGET=bare it measures a bare net/http handler in a
// child process instead, for comparison. Off unless FARM_LOAD is set:
//
//	FARM_LOAD=1 go test ./internal/testkit/farm -run TestLoadProcess -v -timeout 10m
//
// Knobs: FARM_LOAD_FEEDS (125000), FARM_LOAD_RATE (400 requests/s),
// FARM_LOAD_SECONDS (60), FARM_LOAD_COND (0.9), FARM_LOAD_TARGET (farm),
// FARM_LOAD_BIN (a feedfarm binary to run instead of building one).
func TestLoadProcess(t *testing.T) {
	if os.Getenv("FARM_LOAD") == "" {
		t.Skip("set FARM_LOAD=1 to measure a feedfarm process under load")
	}
	cfg := loadConfig{
		feeds: envInt(t, "FARM_LOAD_FEEDS", 125000), rate: envInt(t, "FARM_LOAD_RATE", 400),
		seconds: envInt(t, "FARM_LOAD_SECONDS", 60), cond: envFloat(t, "FARM_LOAD_COND", 0.9),
	}
	var p *loadProc
	if os.Getenv("FARM_LOAD_TARGET") == "bare" {
		p = startBare(t)
	} else {
		p = startFeedfarm(t, cfg.feeds)
	}
	time.Sleep(2 * time.Second) // let the start-up garbage go
	rss0 := procRSS(t, p.pid)
	res := runLoad(t, p, cfg)
	t.Logf("target %s, %d feeds: RSS %.1f MiB after start, %.1f MiB after the load", p.name, cfg.feeds,
		float64(rss0)/(1<<20), float64(procRSS(t, p.pid))/(1<<20))
	t.Logf("%d requests in %.1f s (%.1f/s): statuses %v", res.n, res.wall.Seconds(), float64(res.n)/res.wall.Seconds(), res.statuses)
	n, wall := float64(res.n), res.wall.Seconds()
	t.Logf("CPU %.1f µs/request (%.1f %% of a core); allocations %.1f/request, %.0f bytes/request",
		float64(res.cpu.Microseconds())/n, 100*res.cpu.Seconds()/wall, res.mallocs/n, res.bytes/n)
	t.Logf("without requests: %.2f %% of a core, %.0f allocations/s; net of that: CPU %.1f µs/request, allocations %.1f/request",
		100*res.idleCPU, res.idleMallocs, (res.cpu.Seconds()-res.idleCPU*wall)*1e6/n, (res.mallocs-res.idleMallocs*wall)/n)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average %s", strings.TrimSpace(string(la)))
	}
}

type loadConfig struct {
	feeds, rate, seconds int
	cond                 float64
}

// loadProc is the process under load: its pid, the base URL of its feeds
// and the address of its expvar ("" when it has none).
type loadProc struct {
	name, base, vars string
	pid              int
}

// startFeedfarm builds cmd/feedfarm and starts it with the steady
// benchmark's flags (10 % of the feeds publish per 5 min), waiting until it
// has printed every feed URL.
func startFeedfarm(t *testing.T, feeds int) *loadProc {
	bin := os.Getenv("FARM_LOAD_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "feedfarm")
		build := exec.Command("go", "build", "-o", bin, "../../../cmd/feedfarm")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build feedfarm: %v\n%s", err, out)
		}
	}
	vars := freeAddr(t)
	publish := time.Duration(float64(5*time.Minute) / (0.1 * float64(feeds)))
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-feeds", strconv.Itoa(feeds), "-items", "10",
		"-validators", "both", "-cache-control", "max-age=300", "-record=false", "-log-level", "warn",
		"-publish-every", publish.String(), "-pprof", vars)
	base := startChild(t, cmd, feeds)
	return &loadProc{name: "feedfarm", base: base, vars: vars, pid: cmd.Process.Pid}
}

// startBare runs this test binary as a bare net/http server (TestLoadBareChild).
func startBare(t *testing.T) *loadProc {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadBareChild$")
	cmd.Env = append(os.Environ(), "FARM_LOAD_BARE_CHILD=1")
	base := startChild(t, cmd, 1)
	return &loadProc{name: "bare net/http", base: base, pid: cmd.Process.Pid}
}

// startChild starts cmd and reads lines from its stdout until want of
// them start with http://; it returns the first one's scheme and host.
func startChild(t *testing.T, cmd *exec.Cmd, want int) string {
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	var first string
	for n := 0; n < want && sc.Scan(); {
		if line := sc.Text(); strings.HasPrefix(line, "http://") {
			if n == 0 {
				first = line
			}
			n++
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if first == "" {
		t.Fatalf("%s printed no URL (%v)", cmd.Path, sc.Err())
	}
	i := strings.Index(first[len("http://"):], "/")
	if i < 0 {
		return first
	}
	return first[:len("http://")+i]
}

// TestLoadBareChild is the bare server of startBare: every /f/N answers
// like the farm (Date, ETag, Last-Modified, Cache-Control, Vary), 304 to
// a matching If-None-Match, else 200 with a fixed 3 KiB body, with no
// other work at all.
func TestLoadBareChild(t *testing.T) {
	if os.Getenv("FARM_LOAD_BARE_CHILD") == "" {
		t.Skip("the bare server of TestLoadProcess")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("<item>bare</item>\n", 170))
	const etag = `"0123456789abcdef"`
	fmt.Printf("http://%s/f/1\n", ln.Addr())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Etag", etag)
		h.Set("Last-Modified", "Sun, 01 Mar 2026 12:00:00 GMT")
		h.Set("Cache-Control", "max-age=300")
		h.Set("Vary", "Accept-Encoding")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/rss+xml; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
}

type loadResult struct {
	n              int
	wall, cpu      time.Duration
	mallocs, bytes float64
	statuses       map[int]int
	// idleCPU is the share of a core the process used without requests
	// (publishing), idleMallocs its allocations per second then.
	idleCPU, idleMallocs float64
}

// runLoad polls rate×seconds feeds spread over the farm's, each once (as a
// poller does within a cadence): it first learns their ETags with plain
// GETs, then sends the paced load and measures the process over it.
func runLoad(t *testing.T, p *loadProc, cfg loadConfig) loadResult {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2, MaxConnsPerHost: 2}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	total := cfg.rate * cfg.seconds
	ids := make([]int, total)
	for i := range ids {
		ids[i] = 1 + int(int64(i)*int64(cfg.feeds)/int64(total))
	}
	etags := make([]string, total)
	// Without Accept-Encoding: a later 200 gzips the body afresh, as after a publish.
	parallel(2, total, func(i int) { _, etags[i] = poll(t, c, p.base, ids[i], "", false) })

	res := loadResult{statuses: map[int]int{}}
	// The farm publishes all along: its cost without requests is measured
	// first, so that the cost per request can leave it out.
	i0, _ := memstats(t, p.vars)
	idle0, idleStart := procCPUTime(t, p.pid), time.Now()
	time.Sleep(10 * time.Second)
	m0, b0 := memstats(t, p.vars)
	cpu0 := procCPUTime(t, p.pid)
	start := time.Now()
	res.idleCPU = float64(cpu0-idle0) / float64(start.Sub(idleStart))
	res.idleMallocs = (m0 - i0) / start.Sub(idleStart).Seconds()
	var mu sync.Mutex
	every := time.Second / time.Duration(cfg.rate)
	parallel(2, total, func(i int) {
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		inm := etags[i]
		if float64(i%100) >= cfg.cond*100 {
			inm = "" // plain GET, gzip accepted
		}
		code, _ := poll(t, c, p.base, ids[i], inm, true)
		mu.Lock()
		res.statuses[code]++
		mu.Unlock()
	})
	res.wall = time.Since(start)
	res.cpu = procCPUTime(t, p.pid) - cpu0
	m1, b1 := memstats(t, p.vars)
	res.n, res.mallocs, res.bytes = total, m1-m0, b1-b0
	return res
}

// parallel calls fn(0…n-1) from k goroutines, in order of i overall.
func parallel(k, n int, fn func(i int)) {
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				next.Lock()
				j := i
				i++
				next.Unlock()
				if j >= n {
					return
				}
				fn(j)
			}
		})
	}
	wg.Wait()
}

// poll GETs feed id, conditionally when inm is set, and returns the status
// and the ETag answered; gz asks for gzip. The body is read to the end, as a poller does.
func poll(t *testing.T, c *http.Client, base string, id int, inm string, gz bool) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, base+"/f/"+strconv.Itoa(id), nil)
	req.Header["User-Agent"] = []string{"farm-load/1"}
	if gz {
		req.Header["Accept-Encoding"] = []string{"gzip"}
	}
	if inm != "" {
		req.Header["If-None-Match"] = []string{inm}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("poll feed %d: %v", id, err)
		return 0, ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Etag")
}

// memstats returns the process's Mallocs and TotalAlloc from expvar (zeros
// without one).
func memstats(t *testing.T, addr string) (mallocs, bytes float64) {
	if addr == "" {
		return 0, 0
	}
	resp, err := http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatalf("expvar: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		Memstats struct{ Mallocs, TotalAlloc float64 } `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("expvar: %v", err)
	}
	return v.Memstats.Mallocs, v.Memstats.TotalAlloc
}

// procCPUTime is utime + stime of pid (Linux, 100 ticks a second).
func procCPUTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procRSS is pid's VmRSS in bytes.
func procRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envFloat(t *testing.T, name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		t.Fatalf("%s=%q: want a number in [0, 1]", name, v)
	}
	return f
}
