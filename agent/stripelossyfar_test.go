package agent

import (
	"testing"
	"time"
)

// TestStripeLossySlowBesideFarFast: on fake time over memnet, cold (as
// TestStripeSweep's default), a download over a far fast path and a near
// slow one that loses 0.9 % of its packets at random (TestStripeSweep
// seed 7's mix 58) takes no longer striped than on the fast path alone,
// with no allowance for the runs' spread. Near the end the far path's
// own estimate still averaged its start-up (6.1–6.6 of its 10.25 MB/s)
// and its smoothed round trip counted its queue (300–350 ms on a path of
// 229), so Balance gave it less than its share and the lossy path,
// "fastest" by those views, took the last pieces: they crawled in ~0.1 s
// after the fast path had finished, 0.943–1.024 × the time alone and
// below it in 22 of 40 runs. The rules that share the end now judge the
// fast path at what it may deliver (stripesched's lifted): 1.013–1.043 ×
// in 140 of 140 (2026-12-02). Other mixes of the class are not here, for
// the fix holds them only mostly: 100/250 + 8/30 with 1.5 % loss, 16 MB,
// below the fast path alone in 12 of 20 runs before, 2 of 100 so
// (0.994, 0.997); 120/200 + 10/50 with 1 % loss, 20 MB, 10 of 20 before,
// 7 of 40 so (0.956–0.963: the near path's last piece, inside the tail
// rule by a few ms, late by its loss).
func TestStripeLossySlowBesideFarFast(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	// A path's round trip: memnet delays what a node sends, and ct-server
	// adds mixServerDelay.
	rtt := func(n int) time.Duration { return time.Duration(n)*time.Millisecond - mixServerDelay }
	mix := []mixPath{{82e6 / 8, rtt(229), 0}, {5e6 / 8, rtt(49), 0.009}}
	const size = 11 << 20
	best := stripeMixTime(t, mix[:1], size, false, 0)
	striped := stripeMixTime(t, mix, size, true, 0)
	t.Logf("best path alone %v, striped %v (%.3f × faster)", best, striped, best.Seconds()/striped.Seconds())
	if striped > best {
		t.Errorf("striped %v > best path alone %v", striped, best)
	}
}
