//go:build !unix

package bench

import "time"

// processCPU returns 0: this system's CPU accounting is not read.
func processCPU() time.Duration { return 0 }
