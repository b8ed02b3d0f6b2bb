package agent

import (
	"testing"
	"time"
)

// TestStripeLossySlowPathNeverBelowBest: on fake time over memnet, cold
// (as TestStripeSweep's default), a download striped beside a slower path
// that loses packets at random takes no longer than on the best path
// alone, within the runs' spread (mixRunSpread). Both rows are mixes
// TestStripeSweep found below the best path alone (seed 4, its mixes 71
// and 91; one-way delays here are the round trip less mixServerDelay):
//
//   - 153/47 + 20/17 Mbit/s/ms with 1.7 % loss on the slower: the
//     original's rest moved to the lossy path while its rate was a guess
//     (its first congestion window per round trip), and that path, taken
//     for the swiftest, took the next pieces in order: 0.78–0.85 × the
//     time alone, 0.98–1.03 without the move (stripe's decide).
//   - 129/96 + 12/192 + 26/48 with 1.3 % loss on the third: the lossy
//     path, measured at 3 MB/s before its losses cut its window, was
//     given pieces it delivered at a tenth of that (its Mathis rate is
//     0.3 MB/s): 0.78 × the time alone; 0.77–0.89 with the move above
//     refused alone, 1.02–1.09 with the path also planned at no more than
//     its loss-limited rate (stripesched.LossLimited).
func TestStripeLossySlowPathNeverBelowBest(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name string
		mix  []mixPath
		size int64
	}{
		{"153/47 + 20/17 1.7 %", []mixPath{{19.125e6, ms(42), 0}, {2.5e6, ms(12), 0.017}}, 31 << 20},
		{"129/96 + 12/192 + 26/48 1.3 %", []mixPath{{16.125e6, ms(91), 0}, {1.5e6, ms(187), 0}, {3.25e6, ms(43), 0.013}}, 5 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			best := stripeMixTime(t, c.mix[:1], c.size, false, 0)
			striped := stripeMixTime(t, c.mix, c.size, true, 0)
			t.Logf("best path alone %v, striped %v (%.3f × faster)", best, striped, best.Seconds()/striped.Seconds())
			if striped.Seconds() > best.Seconds()*(1+mixRunSpread) {
				t.Errorf("striped %v > best path alone %v (+%.0f %% for the runs' spread)", striped, best, 100*mixRunSpread)
			}
		})
	}
}
