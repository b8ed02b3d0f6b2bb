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

// dThompson is discounted Thompson sampling (Raj & Kalyani 2017, "Taming
// non-stationary bandits: a Bayesian approach", for Gaussian costs): every
// round each path's sample count and sums decay by γ, so the posterior of
// a path that is not used widens until it is drawn again. θ_k ~ N(x̄_k,
// s_k²/n_k) with the discounted mean and variance; a path whose discounted
// count is below 2 borrows the mean variance of the others (or assumes a
// coefficient of variation of 1), as thompson does.
type dThompson struct {
	discounted
	rng *rand.Rand
}

func newDThompson(cfg Config, rng *rand.Rand) *dThompson {
	return &dThompson{discounted: discounted{gamma: cfg.Gamma}, rng: rng}
}

func (p *dpath) variance() float64 {
	m := p.sum / p.n
	return max(0, p.sumSq/p.n-m*m) * p.n / (p.n - 1)
}

func (s *dThompson) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	var pooled float64
	var withVar int
	for _, p := range s.paths {
		if p.n == 0 {
			return p.id, nil
		}
		if p.n >= 2 {
			pooled += p.variance()
			withVar++
		}
	}
	best, bestTheta := s.paths[0], math.Inf(1)
	for _, p := range s.paths {
		mean := p.sum / p.n
		var v float64
		switch {
		case p.n >= 2:
			v = p.variance()
		case withVar > 0:
			v = pooled / float64(withVar)
		default:
			v = mean * mean
		}
		theta := mean + s.rng.NormFloat64()*math.Sqrt(v/p.n)
		if theta < bestTheta {
			best, bestTheta = p, theta
		}
	}
	return best.id, nil
}
