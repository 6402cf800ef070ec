package poller_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"
)

// CPU time next to wall-clock time in the benchmarks: on a shared 2-core
// machine a pass's wall-clock rate moves by ±30 % from run to run with what
// else runs, while the CPU a feed costs (in this process, and in the
// Postgres backends on the same machine) moves far less, so it is the
// figure to compare changes by.

// cpuSample is CPU time used so far by this process and by every process
// named "postgres" on the machine.
type cpuSample struct{ self, pg time.Duration }

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// readCPU reads both counters, Postgres first, then this process: called
// before a pass, the ~4 ms of walking /proc is then not counted as the
// pass's own CPU.
func readCPU() cpuSample { return cpuSample{pg: readPostgresCPU(), self: readSelfCPU()} }

// readCPUAfter reads both counters, this process first: called after a
// pass, the walk of /proc is not counted either.
func readCPUAfter() cpuSample {
	self := readSelfCPU()
	return cpuSample{self: self, pg: readPostgresCPU()}
}

// readSelfCPU is the user and system CPU time of this process.
func readSelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readPostgresCPU sums the CPU time of every process named "postgres".
func readPostgresCPU() time.Duration {
	var pg time.Duration
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("(postgres)")) {
			continue
		}
		// Fields after the ")" closing the command: state is the 1st,
		// utime the 12th and stime the 13th.
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(string(f[11]), 10, 64)
		st, _ := strconv.ParseInt(string(f[12]), 10, 64)
		pg += time.Duration(u+st) * clockTick
	}
	return pg
}

// sub returns the CPU used between a and s.
func (s cpuSample) sub(a cpuSample) cpuSample { return cpuSample{s.self - a.self, s.pg - a.pg} }

// perUnit reports a sample as µs per unit (Go process, Postgres).
func (s cpuSample) perUnit(n int) (self, pg float64) {
	if n == 0 {
		return 0, 0
	}
	return float64(s.self.Microseconds()) / float64(n), float64(s.pg.Microseconds()) / float64(n)
}

// readGCCPU is the CPU this process has spent in the garbage collector so
// far (the runtime's own estimate): the part of cpu-µs/feed that allocation
// costs beyond the allocations themselves.
func readGCCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}
