package pathsel

import "math"

// Regret accumulates, round by round, how far a strategy's choices fall
// short of the best path's. It needs the truth, so only evaluators (offline
// model, replayed traces, the simulator) can feed it.
type Regret struct {
	obj Objective

	rounds int
	hits   int
	// pseudo is Σ_t (r(A_t) − r*_t): the usual pseudo-regret, the gap in the
	// objective between the chosen path and the best one, in expectation.
	pseudo float64
	// Terms of PCM Eq. 22.
	sumGap     float64 // Σ_t (R_t − μ*_t)
	sumBestVar float64 // Σ_t min_k var(X_k) at t
	mean, m2   float64 // Welford's running mean and M2 of the samples R_t
}

// NewRegret starts a meter for objective obj.
func NewRegret(obj Objective) *Regret { return &Regret{obj: obj} }

// Round is what one round contributes: the true mean and variance of the
// chosen path and of the best path, the observed sample, and whether the
// chosen path was a best one.
type Round struct {
	ChosenMean, ChosenVar float64
	BestMean, BestVar     float64
	Sample                float64
	Hit                   bool
}

// Add records one round and returns its pseudo-regret increment.
func (r *Regret) Add(x Round) float64 {
	r.rounds++
	if x.Hit {
		r.hits++
	}
	inc := max(0, r.obj.Value(x.ChosenMean, x.ChosenVar)-r.obj.Value(x.BestMean, x.BestVar))
	r.pseudo += inc
	r.sumGap += x.Sample - x.BestMean
	r.sumBestVar += x.BestVar
	d := x.Sample - r.mean
	r.mean += d / float64(r.rounds)
	r.m2 += d * (x.Sample - r.mean)
	return inc
}

// Pseudo is the cumulative pseudo-regret Σ_t (r(A_t) − r*_t) in the
// objective's unit (the sample unit when a = 1 or the spread is std).
func (r *Regret) Pseudo() float64 { return r.pseudo }

// Eq22 is PCM journal Eq. 22,
//
//	ρ = a·[Σ_t R_t − T·μ*] + b·[var(R_t) − min_k var(X_k)],
//
// read with μ* the best path's true mean (the printed "min(R_t)", the smallest
// sample seen, would charge every run for the noise of its luckiest round)
// and, so that it holds when the network changes, T·μ* as Σ_t μ*_t and
// min_k var(X_k) as its mean over the rounds. It uses the observed samples
// R_t, so unlike Pseudo it can be negative. var is the population variance
// of R_1..R_T; the spread term uses the objective's spread (var or std).
func (r *Regret) Eq22() float64 {
	if r.rounds == 0 {
		return 0
	}
	t := float64(r.rounds)
	varR := r.m2 / t
	bestVar := r.sumBestVar / t
	spreadGap := varR - bestVar
	if r.obj.Spread == Std {
		spreadGap = math.Sqrt(varR) - math.Sqrt(bestVar)
	}
	return r.obj.A*r.sumGap + (1-r.obj.A)*spreadGap
}

// HitRate is the fraction of rounds on a best path.
func (r *Regret) HitRate() float64 {
	if r.rounds == 0 {
		return 0
	}
	return float64(r.hits) / float64(r.rounds)
}
