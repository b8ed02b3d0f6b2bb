package runner

import (
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// TestSettleTime: the measured download waits until every path could have
// delivered its full down queue and a round trip, so the warm-up's last
// bytes are not in front of its first (settleTime).
func TestSettleTime(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	link := func(delay, mbps float64, qBytes, qPkts int) scenario.Link {
		return scenario.Link{DelayMs: delay, RateMbps: mbps, QueueBytes: qBytes, QueuePackets: qPkts}
	}
	path := func(up, down scenario.Link) scenario.Path { return scenario.Path{Up: up, Down: down} }
	for _, c := range []struct {
		name  string
		paths []scenario.Path
		want  time.Duration
	}{
		// 80 Mbit/s = 10 MB/s: a 500 kB queue drains in 50 ms.
		{"queue in bytes, and the round trip", []scenario.Path{path(link(5, 0, 0, 0), link(5, 80, 500e3, 0))}, ms(60)},
		{"the longest path counts", []scenario.Path{
			path(link(5, 0, 0, 0), link(5, 80, 500e3, 0)),
			path(link(30, 0, 0, 0), link(30, 20, 125e3, 0)),
		}, ms(110)},
		{"queue in packets", []scenario.Path{path(link(0, 0, 0, 0), link(0, 12, 0, 100))}, ms(100)},
		{"the smaller of bytes and packets", []scenario.Path{path(link(0, 0, 0, 0), link(0, 12, 15e3, 100))}, ms(10)},
		{"the emulator's default queue, capped", []scenario.Path{path(link(0, 0, 0, 0), link(0, 2, 0, 0))}, maxSettle},
		{"no rate limit: the round trip only", []scenario.Path{path(link(10, 0, 0, 0), link(10, 0, 0, 0))}, ms(20)},
		{"a rate trace: the cap", []scenario.Path{path(link(1, 0, 0, 0), scenario.Link{DelayMs: 1, RateTrace: "t"})}, maxSettle},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := settleTime(&scenario.Scenario{Paths: c.paths})
			if d := got - c.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("settleTime = %v, want %v", got, c.want)
			}
		})
	}
}

// TestSettleTimeMatrix: every mix of the matrix settles within maxSettle
// and no sooner than its slowest path's round trip and queue (mixQueue).
func TestSettleTimeMatrix(t *testing.T) {
	for _, m := range matrixMixes {
		sc, err := m.scenario()
		if err != nil {
			t.Fatal(err)
		}
		var least time.Duration
		for _, p := range m.paths {
			least = max(least, time.Duration(p.rttMs*float64(time.Millisecond))+mixQueue)
		}
		if got := settleTime(sc); got < least-time.Millisecond || got > maxSettle {
			t.Errorf("%s: settleTime %v, want %v–%v", m.name, got, least, maxSettle)
		}
	}
}
