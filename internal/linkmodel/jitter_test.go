package linkmodel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// The model's jitter has the standard deviation jitter_ms and the mean
// scenario.Jitter.Mean gives: the offline model relies on both.
func TestJitterMomentsMatchScenario(t *testing.T) {
	for _, dist := range []string{"normal", "uniform", "pareto"} {
		l := New(Params{Delay: time.Millisecond, Jitter: 2 * time.Millisecond, JitterDist: dist, Reorder: true},
			rand.New(rand.NewPCG(1, 2)), 0)
		const n = 400_000
		var sum, sumSq float64
		for range n {
			_, _, rel := l.Admit(0, 100, true)
			x := float64(rel-time.Millisecond) / 1e6 // ms
			sum += x
			sumSq += x * x
		}
		mean := sum / n
		std := math.Sqrt(sumSq/n - mean*mean)
		wantMean := scenario.Link{JitterMs: 2, JitterDist: dist}.Jitter().Mean()
		if math.Abs(mean-wantMean) > 0.01*wantMean || math.Abs(std-2) > 0.03*2 {
			t.Errorf("%s: mean %.4f std %.4f, want mean %.4f std 2", dist, mean, std, wantMean)
		}
	}
}
