//go:build !linux

package bench

import "syscall"

// childAttr leaves a child's process attributes as they are: the steady
// scenario measures through /proc and is meant for Linux.
func childAttr() *syscall.SysProcAttr { return nil }
