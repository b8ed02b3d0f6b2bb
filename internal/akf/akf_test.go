package akf

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestAKFConvergesAndTracksStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var k Filter
	for i := 0; i < 300; i++ {
		k.Update(100 + 10*rng.NormFloat64())
	}
	if math.Abs(k.X-100) > 3 {
		t.Fatalf("noisy constant 100 (σ 10): estimate %.2f after 300 samples", k.X)
	}
	// Smoother than the samples: the error variance is well below σ² = 100.
	if k.Z > 25 {
		t.Errorf("posterior variance %.1f, want < 25", k.Z)
	}
	// A step to 200: within 25 samples the estimate is within 10 %.
	n := 0
	for ; n < 200; n++ {
		k.Update(200 + 10*rng.NormFloat64())
		if n >= 5 && math.Abs(k.X-200) < 20 {
			break
		}
	}
	if n > 25 {
		t.Fatalf("step 100 → 200: %d samples to get within 10 %% (estimate %.1f)", n, k.X)
	}
	for i := 0; i < 200; i++ {
		k.Update(200 + 10*rng.NormFloat64())
	}
	if math.Abs(k.X-200) > 4 {
		t.Fatalf("after the step: estimate %.2f, want ≈ 200", k.X)
	}
}

// A zero signal (nothing received in a slot) never makes the filter NaN.
func TestZeroSignal(t *testing.T) {
	var k Filter
	for i, y := range []float64{0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} {
		if x := k.Update(y); math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("update %d (y = %v): estimate %v", i, y, x)
		}
	}
}
