package pathsel

import (
	"math"
	"math/rand/v2"
)

// thompson is Gaussian Thompson sampling for costs: each round it draws a
// plausible mean θ_k ~ N(x̄_k, s_k²/N_k) per path and takes the smallest.
// A path with a single sample has no sample variance; it borrows the mean
// variance of the paths that have one, or, when none has, assumes a
// coefficient of variation of 1 (s = x̄) — wide enough to keep exploring.
type thompson struct {
	t   *tracker
	rng *rand.Rand
}

func newThompson(cfg Config, rng *rand.Rand) *thompson {
	cfg.Estimator, cfg.Trim = Gaussian, ptr(0)
	return &thompson{t: newTracker(cfg), rng: rng}
}

func (s *thompson) AddPath(p PathID) error            { return s.t.AddPath(p) }
func (s *thompson) RemovePath(p PathID) error         { return s.t.RemovePath(p) }
func (s *thompson) Observe(p PathID, x float64) error { return s.t.observe(p, x) }

func (s *thompson) Choose() (PathID, error) {
	if len(s.t.paths) == 0 {
		return 0, ErrNoPaths
	}
	if p, ok := s.t.unexplored(); ok {
		return p.id, nil
	}
	var pooled float64
	var withVar int
	for _, p := range s.t.paths {
		if p.n >= 2 {
			pooled += sampleVar(p.n, p.sum, p.sumSq)
			withVar++
		}
	}
	best, bestTheta := s.t.paths[0], math.Inf(1)
	for _, p := range s.t.paths {
		mean := p.sum / float64(p.n)
		v := sampleVar(p.n, p.sum, p.sumSq)
		switch {
		case p.n >= 2:
		case withVar > 0:
			v = pooled / float64(withVar)
		default:
			v = mean * mean
		}
		theta := mean + s.rng.NormFloat64()*math.Sqrt(v/float64(p.n))
		if theta < bestTheta {
			best, bestTheta = p, theta
		}
	}
	return best.id, nil
}
