package pathsel

import (
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Strategy names a path-selection strategy.
type Strategy string

// The strategies. Hetquic is hetquic's default: PSA with the settings chosen
// by measurement (see Default and the README).
const (
	PSA       Strategy = "psa"        // PCM journal Algorithm 1
	Hetquic   Strategy = "hetquic"    // hetquic's default, a PSA preset
	Polling   Strategy = "polling"    // round robin (PCM's baseline)
	Random    Strategy = "random"     // uniform at random
	Fixed     Strategy = "fixed"      // stays on its first path: plain single-path QUIC
	EpsGreedy Strategy = "eps-greedy" // best mean, a random path with probability ε
	UCB1      Strategy = "ucb1"       // Auer et al. 2002, costs scaled by the observed range
	SWUCB     Strategy = "sw-ucb"     // sliding-window UCB, Garivier & Moulines 2011
	DUCB      Strategy = "d-ucb"      // discounted UCB, Garivier & Moulines 2011
	Thompson  Strategy = "thompson"   // Gaussian Thompson sampling
	Oracle    Strategy = "oracle"     // always the truly best path (NewOracle)
)

// Strategies lists every strategy name, for help texts and validation.
var Strategies = []Strategy{PSA, Hetquic, Polling, Random, Fixed, EpsGreedy, UCB1, SWUCB, DUCB, Thompson, Oracle}

// Estimator is how PSA estimates a path's expectation and spread from its
// samples (PCM journal §4.1).
type Estimator string

const (
	// Lognormal fits ln X ~ N(μ, σ²) by maximum likelihood (Eq. 14–15) and
	// uses the lognormal mean and variance (Eq. 16–17).
	Lognormal Estimator = "lognormal"
	// Gaussian drops the largest fraction Trim of the samples (g, default
	// 10 %) and uses the sample mean and variance of the rest (Eq. 9–10).
	Gaussian Estimator = "gaussian"
)

// Bound is which side of the confidence interval PSA ranks paths by.
type Bound string

const (
	Optimistic  Bound = "optimistic"  // I = r − bonus, Eq. 19 (lower bound)
	Pessimistic Bound = "pessimistic" // I = r + bonus, Eq. 20 (upper bound)
)

// Spread is the fluctuation term of the evaluation r = a·E + b·spread (Eq. 18).
type Spread string

const (
	// Var is the paper's variance. It is in the sample unit squared, so the
	// a/b trade-off changes when the unit does (ms vs s vs ms per byte).
	Var Spread = "var"
	// Std is the standard deviation: same unit as E, so choices do not
	// depend on the unit. hetquic's default.
	Std Spread = "std"
)

// Scope is what the sliding window S counts.
type Scope string

const (
	// Rounds: the last S tasks over all paths (the paper: "the latest S task
	// completion time records"). A path unused for S rounds has no sample
	// left and is explored again — what makes PSA notice a path that got
	// better (PCM journal §5.2.3).
	Rounds Scope = "rounds"
	// PerPath: the last S samples of each path. Nothing ages out while a path
	// is unused.
	PerPath Scope = "path"
)

// Config selects a strategy and its parameters. The zero value of a field
// means "the default" (see withDefaults); YAML field names are the ones
// experiment files use.
type Config struct {
	Strategy Strategy `yaml:"strategy"`

	// A is the weight of the expectation in r = a·E + (1−a)·spread (Eq. 18).
	A         *float64  `yaml:"a"`
	Spread    Spread    `yaml:"spread"`
	Estimator Estimator `yaml:"estimator"`
	// Trim is g, the top fraction of samples the Gaussian estimator drops.
	Trim  *float64 `yaml:"trim"`
	Bound Bound    `yaml:"bound"`
	// Window is S (≥ 1). Unset: 100 for PSA and SW-UCB (the paper's S),
	// 30 per path for hetquic, and no window (remember everything) for the
	// other strategies.
	Window *int   `yaml:"window"`
	Scope  Scope  `yaml:"window_scope"`
	C      CParam `yaml:"c"`

	// Hysteresis makes PSA stay on the path it is on unless another one's
	// indicator is lower by more than this fraction of the current path's
	// evaluation r (0: the paper, always the smallest indicator). A switch
	// costs a validation round trip and restarts slow start (README,
	// "What a switch costs").
	Hysteresis float64 `yaml:"hysteresis"`

	Epsilon *float64 `yaml:"epsilon"` // ε of ε-greedy
	Gamma   float64  `yaml:"gamma"`   // discount of D-UCB
}

// CParam is PSA's exploration constant C: "initial" (Algorithm 1 line 12:
// Eq. 21 evaluated once, when every path has its first sample), "adaptive"
// (Eq. 21 every round), "spread" (per path: its own standard deviation, a
// hetquic extension), or a fixed number.
type CParam struct {
	Mode  string // "initial", "adaptive" or "fixed"
	Value float64
}

// UnmarshalYAML accepts a mode name or a number.
func (c *CParam) UnmarshalYAML(n *yaml.Node) error {
	switch n.Value {
	case "initial", "adaptive", "spread":
		*c = CParam{Mode: n.Value}
		return nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: c: want initial, adaptive or a number, got %q", n.Line, n.Value)
	}
	*c = CParam{Mode: "fixed", Value: v}
	return nil
}

// MarshalYAML writes the mode or the number.
func (c CParam) MarshalYAML() (any, error) {
	if c.Mode == "fixed" {
		return c.Value, nil
	}
	return c.Mode, nil
}

func (c CParam) String() string {
	if c.Mode == "fixed" {
		return strconv.FormatFloat(c.Value, 'g', -1, 64)
	}
	return c.Mode
}

// Default is hetquic's default strategy, chosen by measurement on the
// offline PCM experiments (README, "Choosing the default"): PSA with
//   - the optimistic bound (Eq. 19): optimism is what makes a strategy try a
//     path again when it might have become better;
//   - the unit-invariant standard deviation as the spread, a = 0.8;
//   - a confidence width from each path's own spread (CParam "spread")
//     instead of Eq. 21's C, which is the mean evaluation of all paths and
//     so drowns differences of a few ms in exploration;
//   - a window of the last 30 samples per path: it forgets old samples of a
//     path without forcing every idle path to be re-tried each S rounds,
//     which on Table 5 costs more than the 5 % the default may lose to the
//     oracle;
//   - a hysteresis of 2 %: on the offline PCM experiments it cut switches
//     by 40–80 % at the same mean TCT (within the seeds' noise), and on
//     real QUIC every switch costs a validation round trip.
func Default() Config {
	return Config{
		Strategy:   PSA,
		A:          ptr(0.8),
		Spread:     Std,
		Estimator:  Lognormal,
		Bound:      Optimistic,
		Window:     iptr(30),
		Scope:      PerPath,
		C:          CParam{Mode: "spread"},
		Hysteresis: defaultHysteresis,
	}
}

// defaultHysteresis is Default's: a 2 % gain is worth a switch (see Default).
const defaultHysteresis = 0.02

func ptr(v float64) *float64 { return &v }
func iptr(v int) *int        { return &v }

// paperDefaults are the settings of PCM journal §5.1: a = 0.8, S = 100 over
// rounds, lognormal, variance, g = 10 %, optimistic, C from Eq. 21 once.
func paperDefaults() Config {
	return Config{
		A:         ptr(0.8),
		Spread:    Var,
		Estimator: Lognormal,
		Trim:      ptr(0.10),
		Bound:     Optimistic,
		Window:    iptr(100),
		Scope:     Rounds,
		C:         CParam{Mode: "initial"},
		Epsilon:   ptr(0.05),
		Gamma:     0.99,
	}
}

// Defaults returns c with every unset field filled in: what the selector
// New builds will actually use.
func (c Config) Defaults() Config { return c.withDefaults() }

// withDefaults fills every unset field: from Default for strategy hetquic,
// from the paper's settings otherwise. Strategies that have no window (UCB1,
// ε-greedy, Thompson, D-UCB) remember everything unless given one.
func (c Config) withDefaults() Config {
	d := paperDefaults()
	switch c.Strategy {
	case Hetquic:
		d = Default()
		d.Trim, d.Epsilon, d.Gamma = ptr(0.10), ptr(0.05), 0.99
		if c.Hysteresis == 0 {
			c.Hysteresis = d.Hysteresis
		}
	case PSA, SWUCB:
	default:
		d.Window = iptr(0)
	}
	if c.A == nil {
		c.A = d.A
	}
	if c.Spread == "" {
		c.Spread = d.Spread
	}
	if c.Estimator == "" {
		c.Estimator = d.Estimator
	}
	if c.Trim == nil {
		c.Trim = d.Trim
	}
	if c.Bound == "" {
		c.Bound = d.Bound
	}
	if c.Window == nil {
		c.Window = d.Window
	}
	if c.Scope == "" {
		c.Scope = d.Scope
	}
	if c.C.Mode == "" {
		c.C = d.C
	}
	if c.Epsilon == nil {
		c.Epsilon = d.Epsilon
	}
	if c.Gamma == 0 {
		c.Gamma = d.Gamma
	}
	return c
}

// Validate reports the first bad field as "field: problem".
func (c Config) Validate() error {
	known := false
	for _, s := range Strategies {
		known = known || s == c.Strategy
	}
	switch {
	case c.Strategy == "":
		return fmt.Errorf("strategy: missing")
	case !known:
		return fmt.Errorf("strategy: unknown strategy %q (want one of %v)", c.Strategy, Strategies)
	case c.A != nil && !(*c.A >= 0 && *c.A <= 1):
		return fmt.Errorf("a: %v is outside [0, 1]", *c.A)
	case c.Spread != "" && c.Spread != Var && c.Spread != Std:
		return fmt.Errorf("spread: %q is not var or std", c.Spread)
	case c.Estimator != "" && c.Estimator != Lognormal && c.Estimator != Gaussian:
		return fmt.Errorf("estimator: %q is not lognormal or gaussian", c.Estimator)
	case c.Trim != nil && !(*c.Trim >= 0 && *c.Trim < 1):
		return fmt.Errorf("trim: %v is outside [0, 1)", *c.Trim)
	case c.Bound != "" && c.Bound != Optimistic && c.Bound != Pessimistic:
		return fmt.Errorf("bound: %q is not optimistic or pessimistic", c.Bound)
	case c.Window != nil && *c.Window < 1:
		return fmt.Errorf("window: S = %d must be ≥ 1", *c.Window)
	case c.Scope != "" && c.Scope != Rounds && c.Scope != PerPath:
		return fmt.Errorf("window_scope: %q is not rounds or path", c.Scope)
	case c.C.Mode == "fixed" && (c.C.Value < 0 || math.IsNaN(c.C.Value) || math.IsInf(c.C.Value, 0)):
		return fmt.Errorf("c: %v must be a finite number ≥ 0", c.C.Value)
	case c.Epsilon != nil && !(*c.Epsilon >= 0 && *c.Epsilon <= 1):
		return fmt.Errorf("epsilon: %v is outside [0, 1]", *c.Epsilon)
	case !(c.Hysteresis >= 0 && c.Hysteresis < 10):
		return fmt.Errorf("hysteresis: %v is outside [0, 10)", c.Hysteresis)
	case c.Gamma != 0 && !(c.Gamma > 0 && c.Gamma < 1):
		return fmt.Errorf("gamma: %v is outside (0, 1)", c.Gamma)
	}
	return nil
}

// Objective is the evaluation r = a·E + b·spread of PCM Eq. 18 with b = 1 − a.
// Experiments use it to say which path is truly best, and PSA to rank paths.
type Objective struct {
	A      float64 `json:"a"`
	Spread Spread  `json:"spread"`
}

// Value evaluates a path with expectation mean and variance variance.
func (o Objective) Value(mean, variance float64) float64 {
	s := variance
	if o.Spread == Std {
		s = math.Sqrt(variance)
	}
	return o.A*mean + (1-o.A)*s
}
