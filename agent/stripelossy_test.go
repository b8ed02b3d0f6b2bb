package agent

import (
	"testing"
	"time"
)

// TestStripeLossySlowPathNeverBelowBest: on fake time over memnet, cold
// (as TestStripeSweep's default), a download over four paths of which a
// slower one loses 1.8 % of its packets at random (27/135 + 6/184 +
// 4/123 with 1.8 % + 5/274 Mbit/s/ms, 6 MB: TestStripeSweep seed 3, mix
// 86; one-way delays here are the round trip less mixServerDelay) takes no
// longer striped than on the best path alone, with no allowance for the
// runs' spread. The lossy path held several pieces in order, each in turn
// the head of a full window; the fastest path, stopped by the window,
// copied only the head, a round trip each, and every path stood still
// meanwhile: 0.77–0.96 × the time alone in 8 of 10 runs before (session 24). The
// window-bound fastest path now copies the first piece that would land
// after those before it (Run.holder): 1.02–1.16 in 26 of 26 (2026-11-30).
func TestStripeLossySlowPathNeverBelowBest(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	mix := []mixPath{{3.375e6, ms(130), 0}, {0.75e6, ms(179), 0}, {0.5e6, ms(118), 0.018}, {0.625e6, ms(269), 0}}
	const size = 6 << 20
	best := stripeMixTime(t, mix[:1], size, false, 0)
	striped := stripeMixTime(t, mix, size, true, 0)
	t.Logf("best path alone %v, striped %v (%.3f × faster)", best, striped, best.Seconds()/striped.Seconds())
	if striped > best {
		t.Errorf("striped %v > best path alone %v", striped, best)
	}
}
