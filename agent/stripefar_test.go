package agent

import (
	"testing"
	"time"
)

// TestStripeFarFastPathKeepsOriginal: on fake time over memnet, a download
// whose original stream runs on a fast far path (65 Mbit/s at 120 ms, a
// satellite-like link) beside a path too slow to matter, near or far,
// takes no longer striped than on the fast path alone, within
// mixRunSpread (medians of uselessPathRuns, as
// TestStripeUselessPathCostsLittle; with the fix 0.99–1.02 ×, without it
// 1.20 ×). Before its path is measured, the
// stripe ranks paths by a guess (the congestion window over the round
// trip), which puts the nearer or not yet used path first whatever its
// rate: the slow path took the first bytes in order or the original's
// rest, the original stopped at its first 256 KiB, and the fast path went
// on in pieces ramped from a 32 KiB probe, 1.20 × the time alone on both
// rows (the sweep's class of a fast path with the longer round trip,
// TestStripeSweep; keepOriginal in agent/stripe).
func TestStripeFarFastPathKeepsOriginal(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Round trips are a path's delay and mixServerDelay.
	for _, c := range []struct {
		name string
		mix  []mixPath
	}{
		{"65/120 + 0.5/25", []mixPath{{8.125e6, ms(115), 0}, {62.5e3, ms(20), 0}}},
		{"65/120 + 0.5/300", []mixPath{{8.125e6, ms(115), 0}, {62.5e3, ms(295), 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			alone := medianMixTime(t, c.mix[:1], farSize, false)
			striped := medianMixTime(t, c.mix, farSize, true)
			t.Logf("medians of %d: alone %v, striped %v (%.3f × the time alone)", uselessPathRuns, alone, striped, striped.Seconds()/alone.Seconds())
			if striped.Seconds() > alone.Seconds()*(1+mixRunSpread) {
				t.Errorf("striped %v > alone %v (+%.0f %%)", striped, alone, 100*mixRunSpread)
			}
		})
	}
}

// farSize is TestStripeFarFastPathKeepsOriginal's object: 2 s or so at the
// fast path's rate, past its slow start over 120 ms.
const farSize = 16 << 20
