package pathsel

import (
	"math"
)

// ucb2 is UCB2 (Auer, Cesa-Bianchi & Fischer 2002, Fig. 2), the classic
// bandit that pays for switches: it plays a chosen path for a whole epoch
// of τ(r+1) − τ(r) rounds, τ(r) = ⌈(1+α)^r⌉, so it switches O(K log T)
// times in T rounds instead of UCB1's O(T) in the worst case. For costs,
// with samples scaled by their observed range R as in ucb:
//
//	index_k = x̄_k − R·sqrt((1+α)·ln(e·n/τ(r_k)) / (2τ(r_k)))
//
// with n the rounds so far and r_k the epochs path k has had.
type ucb2 struct {
	paths    []*u2path
	alpha    float64
	n        int
	min, max float64
	playing  *u2path
	left     int // rounds left in the playing path's epoch
}

type u2path struct {
	pathState
	n      int
	sum    float64
	epochs int
}

func newUCB2(cfg Config) *ucb2 {
	return &ucb2{alpha: cfg.Alpha, min: math.Inf(1), max: math.Inf(-1)}
}

func (s *ucb2) tau(r int) float64 { return math.Ceil(math.Pow(1+s.alpha, float64(r))) }

func (s *ucb2) AddPath(id PathID) (err error) {
	s.paths, err = addState(s.paths, &u2path{pathState: pathState{id}})
	return err
}

func (s *ucb2) RemovePath(id PathID) error {
	paths, p, err := removeState(s.paths, id)
	if err != nil {
		return err
	}
	if s.playing == p {
		s.playing, s.left = nil, 0
	}
	s.paths = paths
	return nil
}

func (s *ucb2) Observe(id PathID, x float64) error {
	p, err := observed(s.paths, id, x)
	if err != nil {
		return err
	}
	p.n++
	p.sum += x
	s.n++
	s.min, s.max = min(s.min, x), max(s.max, x)
	return nil
}

func (s *ucb2) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	for _, p := range s.paths {
		if p.n == 0 {
			return p.id, nil
		}
	}
	if s.playing == nil || s.left <= 0 {
		scale := s.max - s.min
		best, bestI := s.paths[0], math.Inf(1)
		for _, p := range s.paths {
			t := s.tau(p.epochs)
			a := math.Sqrt((1 + s.alpha) * max(0, math.Log(math.E*float64(s.n)/t)) / (2 * t))
			if i := p.sum/float64(p.n) - scale*a; i < bestI {
				best, bestI = p, i
			}
		}
		s.playing = best
		s.left = int(max(1, s.tau(best.epochs+1)-s.tau(best.epochs)))
		best.epochs++
	}
	s.left--
	return s.playing.id, nil
}
