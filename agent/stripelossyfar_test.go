package agent

import (
	"testing"
	"time"
)

// TestStripeLossySlowBesideFarFast: on fake time over memnet, cold (as
// TestStripeSweep's default), a download over a far fast path and a near
// slow one that loses packets at random takes no longer striped than on
// the fast path alone, with no allowance for the runs' spread.
//
// Row 82Mb229ms+5Mb49ms0.9% (TestStripeSweep seed 7's mix 58): near the
// end the far path's own estimate still averaged its start-up (6.1–6.6 of
// its 10.25 MB/s) and its smoothed round trip counted its queue (300–350
// ms on a path of 229), so Balance gave it less than its share and the
// lossy path, "fastest" by those views, took the last pieces: they
// crawled in ~0.1 s after the fast path had finished, 0.943–1.024 × the
// time alone and below it in 22 of 40 runs. The rules that share the end
// now judge the fast path at what it may deliver (stripesched's lifted):
// 1.013–1.043 × in 140 of 140 (2026-12-02).
//
// Row 120Mb200ms+10Mb50ms1%: ct-client's QUIC sender held the fast path's
// last piece requests and window updates 150–250 ms, for stock quic-go
// charged its ACK-only packets to its pacer (agent/wire's
// TestRequestMidDownloadOnFarFastPath); below the fast path alone
// (0.96 ×) in 3 of 30 and 1 of 20 runs on stock quic-go, 0 of 20 with
// third_party/quic-go's patch (2026-12-02).
//
// Not here, for the fixes hold it only mostly: 100/250 + 8/30 with 1.5 %
// loss, 16 MB, below the fast path alone in 12 of 20 runs before lifted,
// 2 of 100 after (0.994, 0.997).
func TestStripeLossySlowBesideFarFast(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	// A path's round trip: memnet delays what a node sends, and ct-server
	// adds mixServerDelay.
	rtt := func(n int) time.Duration { return time.Duration(n)*time.Millisecond - mixServerDelay }
	for _, c := range []struct {
		name string
		mix  []mixPath
		size int64
	}{
		{"82Mb229ms+5Mb49ms0.9%", []mixPath{{82e6 / 8, rtt(229), 0}, {5e6 / 8, rtt(49), 0.009}}, 11 << 20},
		{"120Mb200ms+10Mb50ms1%", []mixPath{{120e6 / 8, rtt(200), 0}, {10e6 / 8, rtt(50), 0.01}}, 20 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			best := stripeMixTime(t, c.mix[:1], c.size, false, 0)
			striped := stripeMixTime(t, c.mix, c.size, true, 0)
			t.Logf("best path alone %v, striped %v (%.3f × faster)", best, striped, best.Seconds()/striped.Seconds())
			if striped > best {
				t.Errorf("striped %v > best path alone %v", striped, best)
			}
		})
	}
}
