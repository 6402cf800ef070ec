//go:build unix

package outbox

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, without waiting unless wait: a
// lock the kernel releases when the process holding it dies.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}
