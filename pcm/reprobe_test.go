package pcm

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/pathsel"
)

// reprobeSelector stays on path home, and once asked (ask) re-probes path
// probe as a bandit does: every Choose returns it until a sample of it
// comes back (Observe), then home again. It keeps that first sample.
type reprobeSelector struct {
	mu          sync.Mutex
	home, probe pathsel.PathID
	asking      bool
	sample      float64 // ms; 0: none yet
}

func (s *reprobeSelector) Choose() (pathsel.PathID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking {
		return s.probe, nil
	}
	return s.home, nil
}

func (s *reprobeSelector) Observe(p pathsel.PathID, x float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == s.probe && s.asking {
		s.asking, s.sample = false, x
	}
	return nil
}

func (s *reprobeSelector) ask() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asking = true
}

func (s *reprobeSelector) AddPath(pathsel.PathID) error    { return nil }
func (s *reprobeSelector) RemovePath(pathsel.PathID) error { return nil }

// reprobeMaxCarried bounds the requests a re-probe under load may send
// on the probed 80 ms path, at 10 ms a request: those held while the
// connection drains and the path is validated (a round trip of each:
// 10), those sent until the held ones land (up to two round trips, when
// the server validates the new address first: 16), until the next one
// lands, the sample (8), and the drainPersist that ask to go back before
// the drain back holds the rest (4): 38. Measured 31–32 (fake time, ±race),
// 68 before (Client.afterDrainBurstLocked).
const reprobeMaxCarried = 40

// TestReprobeUnderLoadCostsOneSample: a Client on 20 / 80 ms paths under
// a 5 kB GET every 10 ms, whose selector re-probes the 80 ms path once
// and stays on it until it has a sample of it (as a bandit does: each
// Choose before asks for it again). The connection drains and moves
// there; the first request sent there once the requests the drain held
// have landed must give that sample, and it must measure the path
// (within 3/2 of its round trip, not the burst the move released), so
// the load comes back about a round trip after the burst. Before
// (Client.afterDrainBurstLocked), the whole window of the move
// (followSettle, four round trips) gave no sample: TestHeldOutCuts'
// gen3721/k3/1 row stayed 0.55–0.7 s on its 72 ms path per re-probe.
func TestReprobeUnderLoadCostsOneSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		sel := &reprobeSelector{home: 0, probe: 1}
		c := memDial(t, n, 2, Config{Selector: sel})
		const probeRTT = 80 * time.Millisecond
		n.SetDelay(memPath(1), probeRTT-oneWay) // the server's side adds oneWay
		visitPaths(t, c, 1, 0)                  // both validated; on the 20 ms path
		r := steadyGets(t, c, "https://"+memServer.String(), 2*time.Second, 500*time.Millisecond, sel.ask)
		sel.mu.Lock()
		sample, asking := sel.sample, sel.asking
		sel.mu.Unlock()
		if r.failed > 0 || asking {
			t.Fatalf("%d of %d requests failed, re-probe still waiting for its sample: %v", r.failed, r.sent, asking)
		}
		t.Logf("re-probe sample %.1f ms; requests per path %v", sample, r.paths)
		if limit := float64(probeRTT.Milliseconds()) * 3 / 2; sample > limit {
			t.Errorf("the re-probe's sample took %.1f ms, over %.0f: it measured the move's burst, not the path", sample, limit)
		}
		if got := r.paths[1]; got > reprobeMaxCarried {
			t.Errorf("the re-probe carried %d requests on the 80 ms path (per path %v), want at most %d", got, r.paths, reprobeMaxCarried)
		}
		if a := c.Active(); a != 0 {
			t.Errorf("after the re-probe the connection is on %d, want 0", a)
		}
	})
}
