//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used,
// the farm (and an in-process SMTP sink) included; 0 when the system does
// not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
