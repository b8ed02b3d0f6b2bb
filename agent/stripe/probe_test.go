package stripe

import (
	"context"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestProbeLeavesPausesOut: a slower path whose estimate has had no
// piece for 1.1 s re-measures itself with a copy of the newest piece in
// flight elsewhere (probe, staleAfter), but not where 300 ms of those
// were a pause of the process (pauses: its ticks stopped): it was idle
// for only 0.8 s of the time the process ran.
func TestProbeLeavesPausesOut(t *testing.T) {
	run := func(paused bool) *piece {
		t0 := msAt(0)
		c := &pauses{}
		c.start(t0)
		for ms := 10; ms <= 1100; ms += 10 {
			if paused && ms > 400 && ms < 700 {
				continue // no tick: the process did not run
			}
			c.tick(msAt(ms))
		}
		p := &piece{off: 0, end: 1 << 20, path: 0, copies: 1, running: 1, start: msAt(1000)}
		s := &Run{ctx: context.Background(), host: &fakeHost{fetched: map[int]int64{}}, next: 2 << 20, end: 8 << 20, pieces: []*piece{p},
			queued: map[int]int64{0: p.size()}, est: map[int]*rateEst{1: {rate: 1e6, quiet: t0}}, pauses: c}
		own := stripesched.Path{RTT: 20 * time.Millisecond, Rate: 1e6}
		others := []stripesched.Path{{RTT: 20 * time.Millisecond, Rate: 10e6, Queued: p.size()}}
		return s.probe(1, own, others, msAt(1100))
	}
	if got := run(false); got == nil {
		t.Errorf("idle 1.1 s, no pause: no probe")
	}
	if got := run(true); got != nil {
		t.Errorf("idle 1.1 s of which 300 ms a pause of the process: probed with a copy of %d–%d", got.off, got.end)
	}
}
