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
// more; each of these 3 MB stripes gives the slow path of a 10 : 1 mix
// less than that per piece, so before Measured its rate stayed 0 after
// every warm-up and each new stripe guessed it from its congestion
// window and probed it again (on sockets, the matrix's halving row: its
// 50 Mbit/s path unmeasured after 18 warm-up stripes).
func TestStripeTeachesPathRate(t *testing.T) {
	mix := []mixPath{{18.75e6, 10 * time.Millisecond, 0}, {1.875e6, 25 * time.Millisecond, 0}}
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
		got := rates[len(rates)-1]
		t.Logf("slow path: %.0f bytes over the stripes, rate after each %.3g bytes/s (link %.3g)", float64(slow.bytes.Load()), rates, mix[1].rate)
		if got < taughtLow*mix[1].rate || got > taughtHigh*mix[1].rate {
			t.Errorf("the slow path's rate reads %.3g bytes/s, want %.2f–%.2f × its link's %.3g", got, taughtLow, taughtHigh, mix[1].rate)
		}
	})
}

// TestStripeTeachesPathRate's band around the link's rate: the stripe
// measures a busy period that includes its first round trip (rateEst),
// so it reads a path somewhat low; a path that carried only probes reads
// lower still. In 200 runs the last rate read 0.67–1.00 of the link's
// (0.67 and 0.75 where the slow path carried 0.6–0.7 MB in all), and
// once above it after one stripe (1.15), never after three.
const (
	taughtLow  = 0.5
	taughtHigh = 1.05
)
