package agent

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestStripeTeachesPathRate: a path that carries only small pieces of
// short stripes still gets a rate in the client's estimate
// (PathState.Rate), the stripe's own measurement (stripe.Host.Measured).
// The client samples a path only from a response of rateSampleBytes or
// more; each of these 3 MB stripes gives the slower path of a 3 : 1 mix
// about a quarter of its bytes, in pieces smaller than that, so before
// Measured its rate stayed 0 after every warm-up and each new stripe
// guessed it from its congestion window and probed it again (on
// sockets, the matrix's halving row: its 50 Mbit/s path unmeasured
// after 18 warm-up stripes). With Measured not called the slower path
// here reads 0 after each stripe and carries only probes (33 kB) in the
// second and third (measured 2026-11-30).
//
// The mix is 3 : 1 at equal delays so that the slower path carries a
// share of every stripe (slowShareLow): with the network shaped before
// the connections start (startShapedAgent) a 10 : 1 mix's fast path
// finishes each stripe while the slower one carries only probes, and a
// 3 : 1 mix with the slower path at a 25 ms delay carries 255 kB of the
// first stripe and reads 0.33 × its link, so neither tests the teaching.
func TestStripeTeachesPathRate(t *testing.T) {
	mix := []mixPath{{18.75e6, 10 * time.Millisecond, 0}, {6.25e6, 10 * time.Millisecond, 0}}
	synctest.Test(t, func(t *testing.T) {
		m := startShapedAgent(t, len(mix), shapeMix(mix, rttQueue), nil, nil)
		slow := m.c.paths[1]
		var rates []float64
		for range sumWarm {
			mustGetIntact(t, m, sumWarmSize)
			synctest.Wait() // the stripe has ended (Abandon: its report)
			slow.mu.Lock()
			rates = append(rates, slow.rate)
			slow.mu.Unlock()
		}
		got, carried := rates[len(rates)-1], float64(slow.bytes.Load())
		t.Logf("slow path: %.0f bytes over the stripes, rate after each %.3g bytes/s (link %.3g)", carried, rates, mix[1].rate)
		if carried < slowShareLow*sumWarm*sumWarmSize {
			t.Errorf("the slow path carried %.0f bytes of the %d stripes, want ≥ %.2f of them: a share too small to test the teaching", carried, sumWarm, slowShareLow)
		}
		if got < taughtLow*mix[1].rate || got > taughtHigh*mix[1].rate {
			t.Errorf("the slow path's rate reads %.3g bytes/s, want %.2f–%.2f × its link's %.3g", got, taughtLow, taughtHigh, mix[1].rate)
		}
	})
}

// TestStripeTeachesPathRate's band around the link's rate: the stripe
// measures a busy period that includes its first round trip (rateEst),
// so it reads a path somewhat low; a path that carried only probes reads
// lower still. On the shaped network (2026-11-30, 20 runs each with and
// without -race) the last rate read 0.80–0.88 of the link's and the
// slower path carried 0.21–0.25 of the 9.4 MB; a fourth is the 3 : 1
// mix's fair share, slowShareLow about half of it. With Measured not
// called it carried 0.08 and read 0.
const (
	taughtLow    = 0.5
	taughtHigh   = 1.05
	slowShareLow = 0.12
)
