//go:build stripesweep

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
// (medianMixTime). Not a row 60/250 + 12/60, 6 MB: the 32 kB probe read 0.832–0.886
// of its bound, but its runs since the fix spread over 0.85–0.96 (the
// bubble's goroutine order; a median of three read 0.896 once in 20).
func TestStripeGuessedFarPathRamps(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	// Round trips are a path's delay and mixServerDelay.
	rtt := func(n int) time.Duration { return time.Duration(n)*time.Millisecond - mixServerDelay }
	for _, c := range []sweepMix{
		{"50Mbps-120ms+25Mbps-20ms", []mixPath{{6.25e6, rtt(120), 0}, {3.125e6, rtt(20), 0}}, 8 << 20},
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

// rampBar is TestStripeGuessedFarPathRamps's bar, a share of sweepBound
// (what the paths deliver alone, their slow starts included), above the
// issue's 0.9 of the sum. Fake time gives this row a few discrete
// outcomes: with the 32 kB probe 1.384 s, 0.910 of the bound, in 16 of 16 runs; the fix
// 1.298–1.307 s in most runs, 1.339, 1.342 and 1.368 s (0.921) in some,
// and a median of three reached 1.368 once in 20. The bar sits between
// 0.910 and 0.921: too thin a margin for CI, so the test is behind the
// stripesweep tag and run by hand (go test -tags stripesweep -run
// TestStripeGuessedFarPathRamps ./agent/).
const rampBar = 0.915
