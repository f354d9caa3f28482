//go:build unix

package app

import "syscall"

// fdLimit is the process's limit on open file descriptors (0: unknown). Go raises the soft limit
// to the hard one at start, so this is what the process may really open.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
