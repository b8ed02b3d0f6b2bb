package agent

import (
	"testing"
	"time"
)

// TestStripeFarFastPathRampsAsAlone: on fake time over memnet, cold, a
// download striped over a far fast path and a near slow one takes no
// longer than on the fast path alone (medians of uselessPathRuns). The
// far path is the swiftest once measured, so the stripe fed it its
// pipeline (round trip and two pieces) at its estimate, and the estimate,
// bytes over a span of four round trips, averages a slow start that
// doubles per round trip to well under its last round: what it was asked
// for grew 1.3–1.5× per round trip, not 2× (the sweep's seed 4 #24,
// 137/277 + 9/12: 240 and 333 kB in its 4th and 5th round trips against
// 356 and 685 alone), and the stripe took 1.28 × the time alone. With
// the swiftest path's pipeline planned at twice its last round trip
// (stripesched's planned) and the end's shares counting it so (paced)
// it took 1.054–1.057 ×: its last pieces, 1.7 MB each against a new
// stream's 1 MiB receive window, moved a MiB and waited a round trip for
// the window's update, and ct-server held the path's later pieces behind
// them (0 bytes for 200 ms, no packet lost). With pieces cut to the window
// (stripesched.WindowPiece) 0.957–0.975 × in 20 runs: the bar is the time
// alone, no margin.
func TestStripeFarFastPathRampsAsAlone(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	// Round trips are a path's delay and mixServerDelay.
	rtt := func(n int) time.Duration { return time.Duration(n)*time.Millisecond - mixServerDelay }
	mix := []mixPath{{17.125e6, rtt(277), 0}, {1.125e6, rtt(12), 0}}
	alone := medianMixTime(t, mix[:1], farRampSize, false)
	striped := medianMixTime(t, mix, farRampSize, true)
	t.Logf("alone %v, striped %v (%.3f × the time alone)", alone, striped, striped.Seconds()/alone.Seconds())
	if striped > alone {
		t.Errorf("striped %v > alone %v: the far path ramps slower inside the stripe", striped, alone)
	}
}

// farRampSize: about 2.8 s on the far path alone, of which its slow start
// takes the first two (the sweep's mix's size).
const farRampSize = 13 << 20
