package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux build that matters).
const clockTicks = 100

// postgresCPU returns the CPU time used so far by every process of this
// machine named postgres (server and backends, whoever's connections they
// serve), read from /proc; ok is false where /proc is missing or there is
// no such process. Only meaningful when the database runs on this machine.
func postgresCPU() (time.Duration, bool) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return 0, false
	}
	var ticks int64
	found := false
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "postgres" {
			continue
		}
		// After "(comm) ": state is field 3; utime and stime are 14 and 15.
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ticks += u + st
		found = true
	}
	return time.Duration(ticks) * time.Second / clockTicks, found
}
