//go:build unix

// Package cputime reads the CPU time this process (Process) and the whole
// machine (Machine) have used, for benchmarks that run on a shared
// machine: wall time there measures the other tenants as much as the
// code, process CPU time far less so.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user plus system CPU time of this process so far (all
// threads, the garbage collector's included), or 0 when the platform
// cannot say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
