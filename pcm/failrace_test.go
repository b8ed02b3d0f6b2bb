package pcm

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestCutsAroundATry: two cuts 2 s apart on 110 / 130 / 150 ms paths,
// the first 160 or 300 ms into the load, lose no request and cost none
// over 2 s. With the start-up probe sweep the client settles on the best
// path (110 ms) during the warm-up, and about 150 ms into the load the
// selector tries the 150 ms path: the first cut then lands 10 or 150 ms
// after that move. Three things made the longest request take 3.6–4.1 s
// there, each fixed in pcm/failrace.go or validate.go:
//   - 160 ms: the failover moved back to the 110 ms path without a probe
//     (backToServersPathLocked), but the server had already followed the
//     client to the cut path, and the move waited a whole stall timeout
//     to fail; now the redial races on until the server acknowledges
//     something on the path moved to (heardSinceLocked).
//   - 300 ms: the stall detector's PTO, three round trips just after the
//     move (a fresh RTT estimator's deviation), found the cut after
//     1.35 s of silence (stallDeviation: 0.85 s); and the redial, given a
//     250 ms head start, was ready 360 ms after the stall (now 110 ms).
//
// TestTwoCutsOnSlowPaths cuts at other moments and on other paths.
func TestCutsAroundATry(t *testing.T) {
	rtts := []time.Duration{110 * time.Millisecond, 130 * time.Millisecond, 150 * time.Millisecond}
	for _, api := range []string{"Transport", "Client"} {
		for _, at := range []time.Duration{160 * time.Millisecond, 300 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/at%v", api, at), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { twoCutsCase(t, api, rtts, at, maxWait) })
			})
		}
	}
}
