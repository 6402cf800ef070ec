package bench

import "syscall"

// childAttr puts a child in its own process group (a Ctrl-C reaches only
// feedbench, which then stops it) and has the kernel kill it if feedbench
// dies without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
