package pathsel

import (
	"fmt"
	"math/rand/v2"
)

// polling takes the paths in turn, PCM's baseline: the average path.
type polling struct {
	paths pathList
	next  int
}

func (s *polling) AddPath(p PathID) error    { return s.paths.add(p) }
func (s *polling) RemovePath(p PathID) error { return s.paths.remove(p) }
func (s *polling) Observe(p PathID, x float64) error {
	return s.paths.observe(p, x)
}

func (s *polling) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	s.next %= len(s.paths)
	p := s.paths[s.next]
	s.next++
	return p, nil
}

// random takes a path uniformly at random.
type random struct {
	paths pathList
	rng   *rand.Rand
}

func (s *random) AddPath(p PathID) error    { return s.paths.add(p) }
func (s *random) RemovePath(p PathID) error { return s.paths.remove(p) }
func (s *random) Observe(p PathID, x float64) error {
	return s.paths.observe(p, x)
}

func (s *random) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	return s.paths[s.rng.IntN(len(s.paths))], nil
}

// fixed stays on the first path it was given, as a plain QUIC connection
// stays on the interface it started on; it moves only when that path is removed.
type fixed struct{ paths pathList }

func (s *fixed) AddPath(p PathID) error    { return s.paths.add(p) }
func (s *fixed) RemovePath(p PathID) error { return s.paths.remove(p) }
func (s *fixed) Observe(p PathID, x float64) error {
	return s.paths.observe(p, x)
}

func (s *fixed) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	return s.paths[0], nil
}

// oracle always takes the path its caller knows to be best: the yardstick of
// regret. best is asked every round, so it may follow a changing network.
type oracle struct {
	paths pathList
	best  func() PathID
}

// NewOracle returns a selector that always chooses best(), which must name
// one of its paths.
func NewOracle(best func() PathID) Selector { return &oracle{best: best} }

func (s *oracle) AddPath(p PathID) error    { return s.paths.add(p) }
func (s *oracle) RemovePath(p PathID) error { return s.paths.remove(p) }
func (s *oracle) Observe(p PathID, x float64) error {
	return s.paths.observe(p, x)
}

func (s *oracle) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	p := s.best()
	if s.paths.index(p) < 0 {
		return 0, fmt.Errorf("oracle: best path %d is not available: %w", p, ErrUnknownPath)
	}
	return p, nil
}

// epsGreedy takes the path with the smallest mean sample, and with
// probability ε a path uniformly at random (PCM §5.1, ε = 0.05).
type epsGreedy struct {
	t   *tracker
	eps float64
	rng *rand.Rand
}

func newEpsGreedy(cfg Config, rng *rand.Rand) *epsGreedy {
	cfg.Estimator, cfg.Trim = Gaussian, ptr(0)
	return &epsGreedy{t: newTracker(cfg), eps: *cfg.Epsilon, rng: rng}
}

func (s *epsGreedy) AddPath(p PathID) error            { return s.t.AddPath(p) }
func (s *epsGreedy) RemovePath(p PathID) error         { return s.t.RemovePath(p) }
func (s *epsGreedy) Observe(p PathID, x float64) error { return s.t.observe(p, x) }

func (s *epsGreedy) Choose() (PathID, error) {
	if len(s.t.paths) == 0 {
		return 0, ErrNoPaths
	}
	if p, ok := s.t.unexplored(); ok {
		return p.id, nil
	}
	if s.rng.Float64() < s.eps {
		return s.t.paths[s.rng.IntN(len(s.t.paths))].id, nil
	}
	best := s.t.paths[0]
	for _, p := range s.t.paths[1:] {
		if p.sum/float64(p.n) < best.sum/float64(best.n) {
			best = p
		}
	}
	return best.id, nil
}
