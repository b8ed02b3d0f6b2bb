package agent

import (
	"slices"
	"testing"
	"time"
)

// TestStripeHeadWhereItArrivesFirst: on fake time over memnet, after a
// warm-up, a download beside a fast far path (65 Mbit/s at 120 ms) and a
// slow near one, listed first, takes at most its row's bar of the time on
// the fast path alone (medians of farRuns; found by TestStripeSweep).
//
//   - 0.5 Mbit/s at 25 ms: ranked by SRTT (pathchoice's priority), the
//     request went to the slow path, whose rate the client never measured
//     (its pieces are small and cancelled: pieceSample) and whose queue
//     held its response head 0.6–1.0 s; 1.23–1.25 × the time alone, now
//     0.90–0.98 (the spread: its last piece on the slow path lands after
//     the app reaches it, or not): the bar 1.05 catches the request back
//     on the slow path, not that tail.
//   - 7 Mbit/s at 25 ms: the request on the fast path, its original
//     stream extended by every piece of that path ran at one stream
//     window (1 MiB) per round trip: 0.90 × the time alone, against 0.80
//     with the fast path in pieces past the window (stripe's extension),
//     window-bound judged on the path's least round trip (windowBound).
//     Those were against a time alone that the same 1 MiB window held to
//     6.5 of the path's 8.1 MB/s; with the window growing to
//     wire.DownWindow, the stripe's best is 0.90 × the time alone (the
//     slow path adds 11 %) and it reads 0.92–0.95, so the bar is 0.97.
func TestStripeHeadWhereItArrivesFirst(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	fast := mixPath{8.125e6, 115 * time.Millisecond, 0} // round trips: delay and mixServerDelay
	for _, row := range []struct {
		name string
		slow mixPath
		bar  float64
	}{
		{"0.5/25 + 65/120", mixPath{0.0625e6, 20 * time.Millisecond, 0}, 1.05},
		{"7/25 + 65/120", mixPath{0.875e6, 20 * time.Millisecond, 0}, 0.97},
	} {
		t.Run(row.name, func(t *testing.T) {
			alone := warmMedian(t, []mixPath{fast})
			striped := warmMedian(t, []mixPath{row.slow, fast})
			t.Logf("medians of %d: alone %v, striped %v (%.3f × the time alone)", farRuns, alone, striped, striped.Seconds()/alone.Seconds())
			if striped.Seconds() > alone.Seconds()*row.bar {
				t.Errorf("striped %v > %.2f × alone %v", striped, row.bar, alone)
			}
		})
	}
}

// warmMedian is the median of farRuns warm downloads of farSize over mix
// (warmStripeTime).
func warmMedian(t *testing.T, mix []mixPath) time.Duration {
	t.Helper()
	var runs []time.Duration
	for range farRuns {
		runs = append(runs, warmStripeTime(t, mix, farSize))
	}
	slices.Sort(runs)
	t.Logf("%d path(s): %v", len(mix), runs)
	return runs[len(runs)/2]
}
