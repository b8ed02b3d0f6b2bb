package agent

import (
	"testing"
	"time"
)

// TestStripeGuessedFarPathRamps: on fake time over memnet, cold, a
// download striped over a far fast path and a near slower one (the
// sweep's class C: the near path takes the original, the far one starts
// as a guess and probes) reaches at least rampBar of sweepBound, the time
// the two paths take when each delivers what it can alone, its own slow
// start included. The far path's first probe was 32 kB, under its
// sender's initial window, so the sender's slow start stalled for that
// round trip and the path stayed a round trip behind its start alone
// (stripesched.GuessProbe). Striped is the median of uselessPathRuns
// (medianMixTime): one run of the second row read 0.878 in 21 since the
// fix (the bubble's goroutine order), the others 0.92–0.97.
func TestStripeGuessedFarPathRamps(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	// Round trips are a path's delay and mixServerDelay.
	rtt := func(n int) time.Duration { return time.Duration(n)*time.Millisecond - mixServerDelay }
	for _, c := range []sweepMix{
		{"50Mbps-120ms+25Mbps-20ms", []mixPath{{6.25e6, rtt(120), 0}, {3.125e6, rtt(20), 0}}, 8 << 20},
		{"60Mbps-250ms+12Mbps-60ms", []mixPath{{7.5e6, rtt(250), 0}, {1.5e6, rtt(60), 0}}, 6 << 20},
	} {
		t.Run(c.class, func(t *testing.T) {
			striped := medianMixTime(t, c.mix, c.size, true)
			bound := sweepBound(t, c, striped)
			t.Logf("striped %v, bound %v (%.3f of it)", striped, bound, bound.Seconds()/striped.Seconds())
			if bound.Seconds() < rampBar*striped.Seconds() {
				t.Errorf("striped %v reached %.3f of the bound %v, want ≥ %.2f", striped, bound.Seconds()/striped.Seconds(), bound, rampBar)
			}
		})
	}
}

// rampBar is TestStripeGuessedFarPathRamps's bar, a share of sweepBound:
// the 0.9 of the sum, taken of what the paths deliver alone, their
// slow starts included. The stripe pays what the bound does not (each
// piece's request round trip, the near path's guessed rank at the start):
// since GuessProbe single runs read 0.92–0.97 (20 of 21; once 0.878),
// before it 0.910 (the first row, every run) and 0.832–0.886 (the
// second, 6 runs).
const rampBar = 0.9
