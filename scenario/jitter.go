package scenario

import (
	"math"
	"math/rand/v2"
)

// Jitter draws a link's extra delay J ≥ 0: JitterDist scaled so that J has
// standard deviation JitterMs. The emulator and the simulator both draw
// with it, and MeanDelayMs uses its mean, so the three agree.
type Jitter struct {
	kind  int     // 0 half-normal, 1 uniform, 2 Lomax
	scale float64 // ms per unit draw
}

const (
	// halfNormalStd is the standard deviation of |N(0,1)|: √(1−2/π).
	halfNormalStd = 0.6028102749890869
	// paretoShape is α of the Lomax (Pareto II) jitter: a heavy tail with
	// finite variance (α > 2), λ²α/((α−1)²(α−2)).
	paretoShape = 3.0
)

// Jitter returns the link's jitter distribution.
func (l Link) Jitter() Jitter { return JitterOf(l.JitterMs, l.JitterDist) }

// JitterOf returns the distribution dist ("normal" or "", "uniform",
// "pareto") scaled to standard deviation stdMs.
func JitterOf(stdMs float64, dist string) Jitter {
	s := stdMs
	switch dist {
	case "uniform": // U[0, a): std a/√12
		return Jitter{1, s * math.Sqrt(12)}
	case "pareto": // λ((1−U)^(−1/α) − 1)
		a := paretoShape
		return Jitter{2, s / math.Sqrt(a/((a-1)*(a-1)*(a-2)))}
	}
	return Jitter{0, s / halfNormalStd} // |N(0,1)|·scale
}

// Draw returns one extra delay in ms.
func (j Jitter) Draw(rng *rand.Rand) float64 {
	if j.scale == 0 {
		return 0
	}
	var x float64
	switch j.kind {
	case 0:
		x = math.Abs(rng.NormFloat64())
	case 1:
		x = rng.Float64()
	case 2:
		x = math.Pow(1-rng.Float64(), -1/paretoShape) - 1
	}
	return x * j.scale
}

// Mean is E[J] in ms.
func (j Jitter) Mean() float64 {
	switch j.kind {
	case 1:
		return j.scale / 2
	case 2:
		return j.scale / (paretoShape - 1)
	}
	return j.scale * math.Sqrt(2/math.Pi)
}
