//go:build unix

package outbox

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting: a lock the
// kernel releases when the process holding it dies.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
