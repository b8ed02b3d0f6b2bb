package ride

import (
	"math"
	"time"
)

// ArrivalEstimate is Eq. 5.1: the time a frame arrives when queuedBytes
// (the frame and everything ahead of it on the path, Σ g_j·MSS) start to
// drain at time now over a path with delivery rate rateBps, congestion
// window cwndPkts packets of mss bytes, loss rate loss and RTT srtt:
//
//	a = t* + Σg·MSS/Φ + r_min·τ + OWD,  OWD = τ/2,
//
// with r_min from Eq. 5.2: 0 when the packets fit in the efficient window
// w* = w·(1−ε) (the thesis prints w·ε, a typo: w* is the packets that
// arrive, Binomial with success 1−ε), else the least R ≥ 2 with w* +
// Σ_{r=2..R} E[n_r] ≥ Σg. E[n_r] here is congestion avoidance only, the
// window growing by one packet a round: (w + r − 1)·(1−ε); Eq. 5.3's
// slow-start and timeout phases need transition probabilities the thesis
// does not give.
func ArrivalEstimate(now time.Duration, queuedBytes, mss int, rateBps, cwndPkts, loss float64, srtt time.Duration) time.Duration {
	if rateBps <= 0 || mss <= 0 {
		return Never
	}
	g := math.Ceil(float64(queuedBytes) / float64(mss))
	w := math.Max(1, cwndPkts)
	keep := 1 - math.Min(math.Max(loss, 0), 0.99)
	rmin := 0
	if got := w * keep; got < g {
		for r := 2; got < g && r < 10000; r++ {
			got += (w + float64(r) - 1) * keep
			rmin = r
		}
	}
	tx := float64(g) * float64(mss) * 8 / rateBps
	return now + time.Duration(tx*float64(time.Second)) + time.Duration(rmin)*srtt + srtt/2
}
