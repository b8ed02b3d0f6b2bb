package pathsel

import "math"

// psa is PCM-QUIC's path selection algorithm, PCM journal Algorithm 1.
//
// Stage one (lines 2–11) tries every path once; stage two (13–30) takes the
// path with the smallest indicator
//
//	I_k = r_k ∓ C·sqrt(2 ln T / N_k),  r_k = a·E[X_k] + b·spread(X_k)
//
// with − for the optimistic bound (Eq. 19) and + for the pessimistic one
// (Eq. 20), T replaced by S once T > S, and N_k the path's samples in the
// window. A path never observed (at the start, or added since) is taken
// before any ranking: stage one again, for that path.
//
// Three choices the paper leaves open are Config fields, so that an
// experiment can sweep them (runner's psa: block); the default is the
// reading given here, with the sentence it rests on:
//   - C of Eq. 21 (CParam): "initial" computes it once, when every path
//     first has a sample, and again after a path is added, because line 12
//     ("Calculate C according to Eq.21") stands between the two stages,
//     outside stage two's loop; "adaptive" recomputes it every round, as
//     §4.2's name for it ("an adaptive C value selection strategy") allows;
//     a number fixes it; "spread" is hetquic's per-path width (see width);
//   - the window's scope (Scope): Rounds, the last S tasks over all paths,
//     as §4.1 reads ("uses the latest S task completion time records",
//     whichever path they came from); PerPath keeps each path's last S;
//   - forced re-sampling (Resample): a path with no sample left in the
//     window is taken before any ranking, as §5.2.3 describes S = 50
//     ("forces the algorithm to use both Path-1 and Path-3 at least once
//     within 50 rounds"); Algorithm 1's stage two has no such step, and
//     without it (false) the path is ranked by Eq. 19/20 with N_k = 0, an
//     infinite bonus: the optimistic bound still takes it, the pessimistic
//     one never again. Under Scope PerPath no sample ages out, so the
//     choice matters only under Rounds.
//
// Other choices, fixed: var(X) with one sample is 0 (see estimator.of);
// ties go to the later path, as Algorithm 1 line 17 (I_k ≤ I_min) does.
type psa struct {
	t     *tracker
	est   estimator
	obj   Objective
	sign  float64 // −1 optimistic, +1 pessimistic
	c     CParam
	cInit float64 // C of mode "initial"
	cOK   bool
	// resample is Config.Resample; seen holds the paths observed at least
	// once, which stage one need not try again when resample is off.
	resample bool
	seen     map[*pathStat]bool
	// hysteresis and current implement Config.Hysteresis: current is the
	// path of the last observation (where the connection is).
	hysteresis float64
	current    *pathStat
}

func newPSA(cfg Config) *psa {
	s := &psa{
		t:    newTracker(cfg),
		est:  estimator{kind: cfg.Estimator, trim: *cfg.Trim},
		obj:  Objective{A: *cfg.A, Spread: cfg.Spread},
		sign: -1,
		c:    cfg.C,

		resample:   *cfg.Resample,
		seen:       map[*pathStat]bool{},
		hysteresis: *cfg.Hysteresis,
	}
	if cfg.Bound == Pessimistic {
		s.sign = 1
	}
	return s
}

func (s *psa) AddPath(p PathID) error {
	s.cOK = false // Eq. 21 averages over the paths; a new one changes it
	return s.t.AddPath(p)
}

func (s *psa) RemovePath(p PathID) error {
	if s.current != nil && s.current.id == p {
		s.current = nil
	}
	delete(s.seen, s.t.find(p))
	return s.t.RemovePath(p)
}

func (s *psa) Observe(p PathID, x float64) error {
	if err := s.t.observe(p, x); err != nil {
		return err
	}
	s.current = s.t.find(p)
	s.seen[s.current] = true
	return nil
}

func (s *psa) Choose() (PathID, error) {
	if len(s.t.paths) == 0 {
		return 0, ErrNoPaths
	}
	if p, ok := s.stageOne(); ok {
		return p.id, nil
	}
	c := s.explorationC()
	logT := 2 * math.Log(float64(s.t.horizon()))
	best, bestI := s.t.paths[0], math.Inf(1)
	stayI, stayR := math.Inf(1), 0.0
	for _, p := range s.t.paths {
		if p.n == 0 { // Resample off: no estimate, an infinite bonus
			if i := s.sign * math.Inf(1); i <= bestI {
				best, bestI = p, i
			}
			continue
		}
		e := s.est.of(p)
		if s.c.Mode == "spread" {
			c = s.width(p, e)
		}
		r := s.obj.Value(e.mean, e.variance)
		i := r + s.sign*c*math.Sqrt(logT/float64(p.n))
		if i <= bestI {
			best, bestI = p, i
		}
		if p == s.current {
			stayI, stayR = i, r
		}
	}
	// Moving costs (a validation round trip, a congestion window that
	// starts again): leave the current path only for a clear gain.
	if best != s.current && s.current != nil && bestI > stayI-s.hysteresis*stayR {
		return s.current.id, nil
	}
	return best.id, nil
}

// stageOne is the path to take before any ranking: the first (in the order
// added) with no sample in the window, if it was never observed or, with
// Resample, whatever the reason.
func (s *psa) stageOne() (*pathStat, bool) {
	for _, p := range s.t.paths {
		if p.n == 0 && (s.resample || !s.seen[p]) {
			return p, true
		}
	}
	return nil, false
}

// width is the confidence width of mode "spread": the path's own standard
// deviation, so that a steady path needs few samples to be ruled out and a
// jittery one more (the idea of UCB-V and UCB-Tuned). A lone sample has no
// spread of its own; it borrows the widest spread of the other paths, or,
// when none has one, its own value (a coefficient of variation of 1).
func (s *psa) width(p *pathStat, e estimate) float64 {
	if p.n >= 2 {
		return math.Sqrt(e.variance)
	}
	w := 0.0
	for _, q := range s.t.paths {
		if q.n >= 2 {
			w = max(w, math.Sqrt(s.est.of(q).variance))
		}
	}
	if w == 0 {
		return e.mean
	}
	return w
}

// explorationC is C of Eq. 21 (or the fixed value): the mean r_k over the
// paths with a sample in the window (all of them unless Resample is off).
func (s *psa) explorationC() float64 {
	switch s.c.Mode {
	case "fixed":
		return s.c.Value
	case "initial":
		if s.cOK {
			return s.cInit
		}
	}
	var sum float64
	k := 0
	for _, p := range s.t.paths {
		if p.n == 0 {
			continue
		}
		e := s.est.of(p)
		sum += s.obj.Value(e.mean, e.variance)
		k++
	}
	if k == 0 { // every indicator is infinite: C does not matter
		return 0
	}
	s.cInit, s.cOK = sum/float64(k), true
	return s.cInit
}
