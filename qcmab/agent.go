package qcmab

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hetquic/hetquic/peekaboo"
)

// Policy names how the agent scores arms.
type Policy string

const (
	// UCB is the thesis's: UCB1 per (cell, arm), Eqs. 4.21–4.23, stationary.
	UCB Policy = "ucb"
	// DUCB is discounted UCB per (cell, arm) (Garivier & Moulines 2011):
	// on every reward in a cell, that cell's counts and sums decay by
	// Discount first, so a cell forgets an AP the host has walked away from.
	DUCB Policy = "ducb"
	// LinUCB drops the 27 hand-set cells: a disjoint LinUCB per arm over
	// the continuous context (1, b̂/b_hi, τ̂/τ_hi, ε̂/ε_hi) — the thresholds
	// only scale the features. It shares peekaboo.LinUCB.
	LinUCB Policy = "linucb"
)

// Defaults beyond the thesis, with reasons.
const (
	// DefaultDiscount: γ = 0.995 halves a sample's weight after ~140
	// rewards in its cell, about 21 s of frames at ΔT = 150 ms. Garivier &
	// Moulines suggest 1 − 1/(4√T): T = 4000 frames gives 0.996. Shorter
	// memories (0.98) leave each arm so few effective samples that the
	// √(2 ln n/N) bonus keeps the agent exploring (TestDUCBForgets: 46 % on
	// the best arm at 0.98 against ≥ 60 % at 0.995).
	DefaultDiscount = 0.995
	// DefaultLinAlpha: LinUCB's α for rewards in [0, 1] (Eq. 4.19) and
	// features of order 1; Li et al. 2010's α = 1 + √(ln(2/δ)/2) at δ = 0.05
	// is 2.36, which explores for hundreds of frames at this reward scale.
	DefaultLinAlpha = 0.5
	// DefaultDeadlineMs is ΔT = 150 ms (§4.5.1): arms whose network's τ̂ is
	// above it are filtered (§4.4.2).
	DefaultDeadlineMs = 150
)

// Config configures an Agent.
type Config struct {
	Networks   []string // access network names; arm names derive from them
	Arms       []string // allowed arm names; empty: every network × FEC off/on
	Thresholds Thresholds
	Gamma      float64 // reliability Γ ∈ (0, 1] for Reward (checked here too)
	DeadlineMs float64 // ΔT; 0 means DefaultDeadlineMs
	Policy     Policy  // "" means UCB
	Discount   float64 // DUCB's γ ∈ (0, 1); 0 means DefaultDiscount
	LinAlpha   float64 // LinUCB's α ≥ 0; 0 means DefaultLinAlpha
	// Epsilon ∈ [0, 1]: with this probability pick a uniformly random
	// eligible arm instead of the policy's. 0 for QC-MAB itself; 1 gives
	// the uniform logging policy that replay evaluation needs.
	Epsilon float64
}

// DefaultConfig is the thesis's settings for the given networks, Γ = 0.99.
func DefaultConfig(networks ...string) Config {
	return Config{Networks: networks, Thresholds: DefaultThresholds, Gamma: 0.99, Policy: UCB}
}

// Candidate is a network visible at this slot with its refined context.
type Candidate struct {
	Network int
	Ctx     Context
}

// Decision is the agent's choice for the next frame.
type Decision struct {
	Arm Arm
	// SenderFEC is whether the server protects this frame: the previous
	// decision's FEC, which reached the server with the last ACK (§4.4.1
	// footnote 1, §4.4.4). The network choice acts at once.
	SenderFEC bool
	// Propensity is the probability that this agent, in this state, picks
	// Arm (for off-line evaluation of logs).
	Propensity float64
	Cell       int // the chosen arm's context cell q_t
	// Untried: the chosen arm had no sample in its cell (UCB's infinite
	// index), so the choice explored rather than exploited.
	Untried bool
}

// Agent is the QC-MAB learner. Not safe for concurrent use.
type Agent struct {
	cfg   Config
	arms  []Arm
	n, r  [Cells][]float64 // N_{a|q}, R_{a|q} (discounted under DUCB)
	lin   *peekaboo.LinUCB
	t     int // rewards learnt (Eq. 4.21's t − 1)
	last  *pendingChoice
	fecOn bool // the FEC the server uses next (last committed decision)
}

type pendingChoice struct {
	arm  int
	cell int
	x    []float64
	fec  bool
}

// New validates cfg and returns an agent with no history. Every error is
// one line: thresholds not increasing, Γ outside (0, 1], an unknown arm
// name, an unknown policy, a bad discount or ε.
func New(cfg Config) (*Agent, error) {
	if len(cfg.Networks) == 0 {
		return nil, errors.New("qcmab: no networks")
	}
	seen := map[string]bool{}
	for _, n := range cfg.Networks {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("qcmab: network names must be distinct and non-empty (got %q)", n)
		}
		seen[n] = true
	}
	if err := cfg.Thresholds.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateGamma(cfg.Gamma); err != nil {
		return nil, err
	}
	if cfg.DeadlineMs == 0 {
		cfg.DeadlineMs = DefaultDeadlineMs
	}
	if !(cfg.DeadlineMs > 0) || math.IsInf(cfg.DeadlineMs, 1) {
		return nil, fmt.Errorf("qcmab: deadline must be > 0 ms (got %v)", cfg.DeadlineMs)
	}
	if !(cfg.Epsilon >= 0 && cfg.Epsilon <= 1) {
		return nil, fmt.Errorf("qcmab: epsilon must be in [0, 1] (got %v)", cfg.Epsilon)
	}
	a := &Agent{cfg: cfg}
	if len(cfg.Arms) == 0 {
		for i := range cfg.Networks {
			a.arms = append(a.arms, Arm{i, false}, Arm{i, true})
		}
	}
	for _, name := range cfg.Arms {
		arm, err := ParseArm(name, cfg.Networks)
		if err != nil {
			return nil, err
		}
		for _, b := range a.arms {
			if b == arm {
				return nil, fmt.Errorf("qcmab: arm %q listed twice", name)
			}
		}
		a.arms = append(a.arms, arm)
	}
	switch cfg.Policy {
	case "", UCB:
		a.cfg.Policy = UCB
	case DUCB:
		if a.cfg.Discount == 0 {
			a.cfg.Discount = DefaultDiscount
		}
		if !(a.cfg.Discount > 0 && a.cfg.Discount < 1) {
			return nil, fmt.Errorf("qcmab: discount must be in (0, 1) (got %v)", cfg.Discount)
		}
	case LinUCB:
		if a.cfg.LinAlpha == 0 {
			a.cfg.LinAlpha = DefaultLinAlpha
		}
		lin, err := peekaboo.NewLinUCB(len(a.arms), 4, a.cfg.LinAlpha)
		if err != nil {
			return nil, fmt.Errorf("qcmab: %w", err)
		}
		a.lin = lin
	default:
		return nil, fmt.Errorf("qcmab: unknown policy %q (ucb, ducb, linucb)", cfg.Policy)
	}
	for q := range Cells {
		a.n[q] = make([]float64, len(a.arms))
		a.r[q] = make([]float64, len(a.arms))
	}
	return a, nil
}

// ArmNames lists the agent's arm names in index order.
func (a *Agent) ArmNames() []string {
	out := make([]string, len(a.arms))
	for i, arm := range a.arms {
		out[i] = ArmName(arm, a.cfg.Networks)
	}
	return out
}

func (a *Agent) features(c Context) []float64 {
	th := a.cfg.Thresholds
	return []float64{1, c.BandwidthMbps / th.BandwidthMbps[1], c.OWDms / th.OWDms[1], c.Loss / th.Loss[1]}
}

// index is an arm's score in its cell: Eq. 4.21's H (UCB), the discounted
// H (DUCB), or LinUCB's θᵀx + α√(xᵀA⁻¹x). An untried arm scores +Inf.
func (a *Agent) index(i, q int, x []float64) float64 {
	if a.cfg.Policy == LinUCB {
		m, w, _ := a.lin.Score(i, x) // x has the agent's own dimension
		return m + a.cfg.LinAlpha*w
	}
	n := a.n[q][i]
	if n == 0 {
		return math.Inf(1)
	}
	logT := math.Log(float64(a.t + 1)) // Eq. 4.21: ln t at slot t = rewards + 1
	if a.cfg.Policy == DUCB {
		tot := 0.0
		for _, v := range a.n[q] {
			tot += v
		}
		logT = math.Log(max(tot, 1))
	}
	return a.r[q][i]/n + math.Sqrt(2*logT/n)
}

// Choose picks the arm for the next frame (Eq. 4.23) among the arms whose
// network is a candidate and whose τ̂ ≤ ΔT (§4.4.2; when that leaves none,
// the deadline filter is dropped). Ties — all untried arms at the start,
// §4.4.5 — are broken uniformly at random with rng. The choice waits for
// Learn; a second Choose replaces it.
func (a *Agent) Choose(cands []Candidate, rng *rand.Rand) (Decision, error) {
	ctx := map[int]Context{}
	for _, c := range cands {
		if c.Network < 0 || c.Network >= len(a.cfg.Networks) {
			return Decision{}, fmt.Errorf("qcmab: candidate network %d out of range", c.Network)
		}
		x := c.Ctx
		if math.IsNaN(x.BandwidthMbps) || math.IsNaN(x.OWDms) || math.IsNaN(x.Loss) {
			return Decision{}, fmt.Errorf("qcmab: context of %s is NaN", a.cfg.Networks[c.Network])
		}
		ctx[c.Network] = x
	}
	var elig []int
	for pass := 0; pass < 2 && len(elig) == 0; pass++ {
		for i, arm := range a.arms {
			c, ok := ctx[arm.Network]
			if ok && (pass == 1 || c.OWDms <= a.cfg.DeadlineMs) {
				elig = append(elig, i)
			}
		}
	}
	if len(elig) == 0 {
		return Decision{}, errors.New("qcmab: no arm's network is visible")
	}
	var best []int
	bestH := math.Inf(-1)
	for _, i := range elig {
		c := ctx[a.arms[i].Network]
		h := a.index(i, a.cfg.Thresholds.Cell(c), a.features(c))
		switch {
		case h > bestH:
			best, bestH = append(best[:0], i), h
		case h == bestH:
			best = append(best, i)
		}
	}
	k := len(elig)
	pick := best[rng.IntN(len(best))]
	if a.cfg.Epsilon > 0 && rng.Float64() < a.cfg.Epsilon {
		pick = elig[rng.IntN(k)]
	}
	prop := a.cfg.Epsilon / float64(k)
	for _, b := range best {
		if b == pick {
			prop += (1 - a.cfg.Epsilon) / float64(len(best))
		}
	}
	c := ctx[a.arms[pick].Network]
	q := a.cfg.Thresholds.Cell(c)
	a.last = &pendingChoice{arm: pick, cell: q, x: a.features(c), fec: a.arms[pick].FEC}
	untried := a.cfg.Policy != LinUCB && a.n[q][pick] == 0
	return Decision{Arm: a.arms[pick], SenderFEC: a.fecOn, Propensity: prop, Cell: q, Untried: untried}, nil
}

// Learn credits reward r ∈ [0, 1] (Eq. 4.19) to the last chosen arm in its
// cell (Eq. 4.22) and commits the choice: its FEC bit is what the server
// uses for the next frame.
func (a *Agent) Learn(r float64) error {
	if a.last == nil {
		return errors.New("qcmab: Learn without a pending Choose")
	}
	if !(r >= 0 && r <= 1) {
		return fmt.Errorf("qcmab: reward must be in [0, 1] (got %v)", r)
	}
	p := a.last
	a.last = nil
	switch a.cfg.Policy {
	case LinUCB:
		if err := a.lin.Update(p.arm, p.x, r); err != nil {
			return err
		}
	case DUCB:
		for i := range a.n[p.cell] {
			a.n[p.cell][i] *= a.cfg.Discount
			a.r[p.cell][i] *= a.cfg.Discount
		}
		fallthrough
	default:
		a.n[p.cell][p.arm]++
		a.r[p.cell][p.arm] += r
	}
	a.t++
	a.fecOn = p.fec
	return nil
}

// Skip drops the pending choice without learning (replay evaluation, or a
// frame that was never sent).
func (a *Agent) Skip() { a.last = nil }
