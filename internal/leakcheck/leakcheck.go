// Package leakcheck lets tests check that closing something ended every
// goroutine it started: goroutines end a little after Close returns, so the
// check waits for them a while before it counts.
package leakcheck

import (
	"runtime"
	"time"
)

// Wait waits up to within for at most want goroutines to run. It returns
// how many run then and, when that is more than want, the stacks of all
// of them, to name the leak.
func Wait(want int, within time.Duration) (n int, stacks string) {
	deadline := time.Now().Add(within)
	for {
		n = runtime.NumGoroutine()
		if n <= want {
			return n, ""
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return n, string(buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
