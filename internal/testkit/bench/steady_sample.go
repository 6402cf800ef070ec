package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// What the steady scenario reads from outside the processes it measures:
// /proc/<pid>/stat and /status (Linux) for CPU and memory, pg_stat_activity
// to find serve's Postgres backends, and serve's /metrics.

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go runs on).
const userHZ = 100

// procCPU returns the user + system CPU time pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its closing parenthesis, state being field 3.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// procMem returns pid's resident set (VmRSS) and its peak (VmHWM) in bytes.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		for key, dst := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &hwm} {
			if v, ok := strings.CutPrefix(line, key); ok {
				if f := strings.Fields(v); len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					*dst = kb << 10
				}
			}
		}
	}
	return rss, hwm, nil
}

// clearPeak resets pid's VmHWM to its current RSS (Linux ≥ 4.0); it
// reports whether that worked.
func clearPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// pgCPU follows the CPU time of a set of Postgres server processes that
// come and go (the backends of serve's pool, autovacuum workers): each
// sample adds what every process used since it was last seen, or since it
// started when it appeared after the first sample.
type pgCPU struct {
	last  map[int]time.Duration
	total time.Duration
	seen  int // distinct processes
	first bool
}

// add takes one sample of pids; the first sample only sets the baselines.
func (p *pgCPU) add(pids []int) {
	if p.last == nil {
		p.last, p.first = map[int]time.Duration{}, true
	}
	for _, pid := range pids {
		cpu, err := procCPU(pid)
		if err != nil {
			continue // gone since the query
		}
		prev, ok := p.last[pid]
		switch {
		case ok:
			p.total += cpu - prev
		case !p.first:
			p.total += cpu // started within the window
			p.seen++
		default:
			p.seen++
		}
		p.last[pid] = cpu
	}
	p.first = false
}

// pgPids lists the pids of serve's backends (client backends whose
// application_name is app), of the parallel workers they started (which
// take their leader's application_name: processes that live for one
// query, not connections) and of the autovacuum workers of database db.
func pgPids(ctx context.Context, st *store.Store, app, db string) (backends, workers, vacuum []int, err error) {
	var rows []struct {
		Pid  int
		Kind string
	}
	err = st.DB.WithContext(ctx).Raw(`SELECT pid, CASE WHEN application_name <> ? THEN 'v'
		WHEN backend_type = 'parallel worker' THEN 'w' ELSE 'b' END AS kind
		FROM pg_stat_activity WHERE application_name = ? OR (datname = ? AND backend_type = 'autovacuum worker')`,
		app, app, db).Scan(&rows).Error
	for _, r := range rows {
		switch r.Kind {
		case "b":
			backends = append(backends, r.Pid)
		case "w":
			workers = append(workers, r.Pid)
		default:
			vacuum = append(vacuum, r.Pid)
		}
	}
	return backends, workers, vacuum, err
}

// series is one scrape of /metrics: each series ("name{labels}") and its
// value.
type series map[string]float64

// scrape reads base/metrics.
func scrape(ctx context.Context, base string) (series, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape /metrics: status %d, %v", resp.StatusCode, err)
	}
	out := series{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil && i > 0 {
			out[line[:i]] = v
		}
	}
	return out, nil
}

// sum adds the series of metric name whose labels contain every one of
// labels (`outcome="not_modified"`).
func (m series) sum(name string, labels ...string) float64 {
	var t float64
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, name)
		if !ok || (rest != "" && rest[0] != '{') {
			continue
		}
		if !containsAll(rest, labels) {
			continue
		}
		t += v
	}
	return t
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// bucket is one cumulative histogram bucket.
type bucket struct {
	le float64 // upper bound; +Inf for the last
	n  float64 // observations ≤ le
}

// buckets returns histogram name's cumulative buckets, by bound.
func (m series) buckets(name string) []bucket {
	var out []bucket
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, name+`_bucket{le="`)
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64)
		if err == nil {
			out = append(out, bucket{le, v})
		}
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// quantile estimates the q-quantile of the observations between two
// scrapes of a histogram (cumulative buckets, same bounds), interpolating
// linearly inside a bucket as Prometheus' histogram_quantile does. It
// returns NaN with no observation, and +Inf when the quantile falls past
// the last finite bound.
func quantile(q float64, before, after []bucket) float64 {
	if len(after) == 0 || len(before) != len(after) {
		return math.NaN()
	}
	d := make([]bucket, len(after))
	for i := range after {
		d[i] = bucket{after[i].le, after[i].n - before[i].n}
	}
	total := d[len(d)-1].n
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lo, below := 0.0, 0.0
	for _, b := range d {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return math.Inf(1)
			}
			if b.n == below {
				return b.le
			}
			return lo + (b.le-lo)*(rank-below)/(b.n-below)
		}
		lo, below = b.le, b.n
	}
	return math.Inf(1)
}
