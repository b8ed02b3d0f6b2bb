package pathsel

import (
	"math"
)

// ucb is UCB1 (Auer, Cesa-Bianchi & Fischer 2002) and, with a window over
// rounds, sliding-window UCB (Garivier & Moulines 2011), for costs: the index
// is a lower confidence bound and the smallest wins,
//
//	index_k = mean_k − R·sqrt(ξ ln T / N_k).
//
// UCB1 assumes rewards in [0, 1]; task completion times have no fixed range,
// so R is the range of the samples seen so far (max − min), which makes the
// index what UCB1 computes on min-max-normalised samples. ξ is 2 for UCB1
// and 0.6 for SW-UCB, as Garivier & Moulines use.
type ucb struct {
	t        *tracker
	xi       float64
	min, max float64
}

func newUCB(cfg Config) *ucb {
	cfg.Estimator, cfg.Trim = Gaussian, ptr(0)
	xi := 2.0
	if cfg.Strategy == SWUCB {
		xi = 0.6
	} else {
		cfg.Window = iptr(0) // UCB1 remembers everything
	}
	return &ucb{t: newTracker(cfg), xi: xi, min: math.Inf(1), max: math.Inf(-1)}
}

func (s *ucb) AddPath(p PathID) error    { return s.t.AddPath(p) }
func (s *ucb) RemovePath(p PathID) error { return s.t.RemovePath(p) }

func (s *ucb) Observe(p PathID, x float64) error {
	if err := s.t.observe(p, x); err != nil {
		return err
	}
	s.min, s.max = min(s.min, x), max(s.max, x)
	return nil
}

func (s *ucb) Choose() (PathID, error) {
	if len(s.t.paths) == 0 {
		return 0, ErrNoPaths
	}
	if p, ok := s.t.unexplored(); ok {
		return p.id, nil
	}
	scale := s.max - s.min
	logT := s.xi * math.Log(float64(s.t.horizon()))
	best, bestI := s.t.paths[0], math.Inf(1)
	for _, p := range s.t.paths {
		i := p.sum/float64(p.n) - scale*math.Sqrt(logT/float64(p.n))
		if i < bestI {
			best, bestI = p, i
		}
	}
	return best.id, nil
}

// ducb is discounted UCB (Garivier & Moulines 2011) for costs: every round
// all counts and sums decay by γ, so old samples fade instead of falling
// out of a window, and an unused path's bonus grows until it is tried again.
//
//	index_k = S_k/N_k − 2R·sqrt(ξ ln n / N_k),  n = Σ N_k, ξ = 0.6
type ducb struct {
	discounted
	min, max float64
}

// discounted is the memory of the discounted strategies (D-UCB and
// discounted Thompson sampling): per path a count and sums that decay by γ
// every round.
type discounted struct {
	paths []*dpath
	gamma float64
}

type dpath struct {
	pathState
	n, sum, sumSq float64 // discounted count, Σx and Σx²
}

func (s *discounted) AddPath(id PathID) (err error) {
	s.paths, err = addState(s.paths, &dpath{pathState: pathState{id}})
	return err
}

func (s *discounted) RemovePath(id PathID) (err error) {
	s.paths, _, err = removeState(s.paths, id)
	return err
}

// Observe decays every path's statistics and adds x to path id's.
func (s *discounted) Observe(id PathID, x float64) error {
	p, err := observed(s.paths, id, x)
	if err != nil {
		return err
	}
	for _, q := range s.paths {
		q.n *= s.gamma
		q.sum *= s.gamma
		q.sumSq *= s.gamma
	}
	p.n++
	p.sum += x
	p.sumSq += x * x
	return nil
}

func newDUCB(cfg Config) *ducb {
	return &ducb{discounted: discounted{gamma: cfg.Gamma}, min: math.Inf(1), max: math.Inf(-1)}
}

func (s *ducb) Observe(id PathID, x float64) error {
	if err := s.discounted.Observe(id, x); err != nil {
		return err
	}
	s.min, s.max = min(s.min, x), max(s.max, x)
	return nil
}

func (s *ducb) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	var total float64
	for _, p := range s.paths {
		if p.n == 0 {
			return p.id, nil
		}
		total += p.n
	}
	scale := s.max - s.min
	logN := 0.6 * math.Log(max(total, 1))
	best, bestI := s.paths[0], math.Inf(1)
	for _, p := range s.paths {
		i := p.sum/p.n - 2*scale*math.Sqrt(logN/p.n)
		if i < bestI {
			best, bestI = p, i
		}
	}
	return best.id, nil
}
