// Package peekaboo is the Peekaboo multipath scheduler (Wu et al., "Peekaboo:
// Learning-based Multipath Scheduling for Dynamic Heterogeneous
// Environments", IEEE JSAC 38(10), 2020; the thesis's [139]) and the disjoint
// LinUCB bandit it is built on (Li et al., WWW 2010, Algorithm 1).
//
// The package is pure and scheduler-agnostic: features in, action out,
// reward later. It imports no I/O, reads no clock and draws randomness only
// from the *rand.Rand the caller passes, so a simulator run and a real
// client make the same decisions from the same inputs. QC-MAB's Peekaboo
// baseline (chapter 4) and RIDE's (chapter 5) both use it.
package peekaboo

import (
	"errors"
	"fmt"
	"math"
)

// LinUCB is a disjoint linear UCB bandit (Li et al. 2010, Algorithm 1): each
// arm a keeps A_a = I + Σ x xᵀ and b_a = Σ r x over the contexts x it was
// played in, estimates θ_a = A_a⁻¹ b_a and scores a context by
//
//	p_a(x) = θ_aᵀ x + α √(xᵀ A_a⁻¹ x).
//
// θ is A⁻¹b. (An ns-3 port of Peekaboo computes A·b; that is not a
// least-squares estimate and grows without bound.) A_a⁻¹ is kept directly
// and updated with the Sherman–Morrison identity, O(d²) per update, so no
// matrix is ever inverted.
//
// A LinUCB is not safe for concurrent use.
type LinUCB struct {
	d     int
	alpha float64
	ainv  [][]float64 // per arm, d×d row-major: A_a⁻¹
	b     [][]float64 // per arm: b_a
	n     []int       // per arm: updates
}

// ErrBadArm is returned for an arm index outside [0, arms).
var ErrBadArm = errors.New("peekaboo: arm out of range")

// NewLinUCB returns a bandit with the given number of arms over
// d-dimensional contexts and exploration weight alpha ≥ 0 (0: greedy on
// θᵀx, which is what Peekaboo's public code deploys).
func NewLinUCB(arms, d int, alpha float64) (*LinUCB, error) {
	if arms < 1 || d < 1 {
		return nil, fmt.Errorf("peekaboo: LinUCB needs ≥ 1 arm and ≥ 1 feature (got %d arms, %d features)", arms, d)
	}
	if !(alpha >= 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("peekaboo: LinUCB alpha must be finite and ≥ 0 (got %v)", alpha)
	}
	l := &LinUCB{d: d, alpha: alpha}
	for range arms {
		l.AddArm()
	}
	return l, nil
}

// AddArm appends an arm with no history (A = I, b = 0) and returns its index.
func (l *LinUCB) AddArm() int {
	m := make([][]float64, l.d)
	for i := range m {
		m[i] = make([]float64, l.d)
		m[i][i] = 1
	}
	l.ainv = append(l.ainv, flatten(m))
	l.b = append(l.b, make([]float64, l.d))
	l.n = append(l.n, 0)
	return len(l.n) - 1
}

func flatten(m [][]float64) []float64 {
	out := make([]float64, 0, len(m)*len(m))
	for _, r := range m {
		out = append(out, r...)
	}
	return out
}

// Arms is the number of arms; Dim the context dimension.
func (l *LinUCB) Arms() int { return len(l.n) }

// Dim is the context dimension d.
func (l *LinUCB) Dim() int { return l.d }

// Plays is how many rewards arm a has learnt from.
func (l *LinUCB) Plays(a int) int { return l.n[a] }

func (l *LinUCB) check(a int, x []float64) error {
	if a < 0 || a >= len(l.n) {
		return fmt.Errorf("%w: %d of %d", ErrBadArm, a, len(l.n))
	}
	if len(x) != l.d {
		return fmt.Errorf("peekaboo: context has %d features, want %d", len(x), l.d)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("peekaboo: feature %d is %v", i, v)
		}
	}
	return nil
}

// Theta returns θ_a = A_a⁻¹ b_a (a fresh slice).
func (l *LinUCB) Theta(a int) []float64 {
	th := make([]float64, l.d)
	ai := l.ainv[a]
	for i := range l.d {
		s := 0.0
		for j := range l.d {
			s += ai[i*l.d+j] * l.b[a][j]
		}
		th[i] = s
	}
	return th
}

// Score returns arm a's mean estimate θ_aᵀx and its confidence width
// √(xᵀA_a⁻¹x); the UCB is mean + α·width.
func (l *LinUCB) Score(a int, x []float64) (mean, width float64, err error) {
	if err := l.check(a, x); err != nil {
		return 0, 0, err
	}
	th := l.Theta(a)
	ai := l.ainv[a]
	q := 0.0
	for i := range l.d {
		mean += th[i] * x[i]
		for j := range l.d {
			q += x[i] * ai[i*l.d+j] * x[j]
		}
	}
	return mean, math.Sqrt(max(q, 0)), nil
}

// Choose returns the arm among candidates with the largest UCB for context
// x (ties: the earlier candidate) and that UCB.
func (l *LinUCB) Choose(x []float64, candidates []int) (arm int, ucb float64, err error) {
	if len(candidates) == 0 {
		return 0, 0, errors.New("peekaboo: no candidate arms")
	}
	arm, ucb = -1, math.Inf(-1)
	for _, a := range candidates {
		m, w, err := l.Score(a, x)
		if err != nil {
			return 0, 0, err
		}
		if u := m + l.alpha*w; u > ucb {
			arm, ucb = a, u
		}
	}
	return arm, ucb, nil
}

// Update teaches arm a that context x earned reward r: A_a += x xᵀ,
// b_a += r x, with A_a⁻¹ refreshed by Sherman–Morrison:
// (A + xxᵀ)⁻¹ = A⁻¹ − (A⁻¹x)(A⁻¹x)ᵀ / (1 + xᵀA⁻¹x).
func (l *LinUCB) Update(a int, x []float64, r float64) error {
	if err := l.check(a, x); err != nil {
		return err
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return fmt.Errorf("peekaboo: reward is %v", r)
	}
	d, ai := l.d, l.ainv[a]
	u := make([]float64, d) // A⁻¹x (A⁻¹ is symmetric)
	for i := range d {
		for j := range d {
			u[i] += ai[i*d+j] * x[j]
		}
	}
	den := 1.0
	for i := range d {
		den += x[i] * u[i]
	}
	for i := range d {
		for j := range d {
			ai[i*d+j] -= u[i] * u[j] / den
		}
		l.b[a][i] += r * x[i]
	}
	l.n[a]++
	return nil
}
