package pathsel

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Strategy names a path-selection strategy.
type Strategy string

// The strategies. Hetquic is hetquic's default: PSA with the settings chosen
// by measurement (see Default and the README).
const (
	PSA       Strategy = "psa"        // PCM journal Algorithm 1
	Hetquic   Strategy = "hetquic"    // hetquic's default: adaptive PSA (adaptive.go)
	Polling   Strategy = "polling"    // round robin (PCM's baseline)
	Random    Strategy = "random"     // uniform at random
	Fixed     Strategy = "fixed"      // stays on its first path: plain single-path QUIC
	EpsGreedy Strategy = "eps-greedy" // best mean, a random path with probability ε
	UCB1      Strategy = "ucb1"       // Auer et al. 2002, costs scaled by the observed range
	SWUCB     Strategy = "sw-ucb"     // sliding-window UCB, Garivier & Moulines 2011
	DUCB      Strategy = "d-ucb"      // discounted UCB, Garivier & Moulines 2011
	Thompson  Strategy = "thompson"   // Gaussian Thompson sampling
	DThompson Strategy = "d-thompson" // discounted Gaussian Thompson sampling
	UCB2      Strategy = "ucb2"       // UCB2, Auer et al. 2002: epochs, few switches
	Oracle    Strategy = "oracle"     // always the truly best path (NewOracle)
)

// Strategies lists every strategy name, for help texts and validation.
var Strategies = []Strategy{PSA, Hetquic, Polling, Random, Fixed, EpsGreedy, UCB1, UCB2, SWUCB, DUCB, Thompson, DThompson, Oracle}

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
	// Resample makes PSA take a path that has no sample left in its window
	// (under Scope Rounds: unused for S rounds) before it ranks any path;
	// false ranks such a path by Eq. 19/20 with N_k = 0, an infinite bonus
	// (see psa). Unset: true, the paper's reading. Only psa reads it.
	Resample *bool `yaml:"resample"`

	// Hysteresis makes PSA stay on the path it is on unless another one's
	// indicator is lower by more than this fraction of the current path's
	// evaluation r (0: the paper, always the smallest indicator). A switch
	// costs a validation round trip and restarts slow start (README,
	// "What a switch costs"). Unset (nil) is the strategy's default; an
	// explicit 0 turns hysteresis off, also for hetquic.
	Hysteresis *float64 `yaml:"hysteresis"`

	Epsilon *float64 `yaml:"epsilon"` // ε of ε-greedy
	Gamma   float64  `yaml:"gamma"`   // discount of D-UCB and discounted Thompson

	// ReprobeRounds is τ of hetquic's re-probe bonus: an idle path costs at
	// most 1/(τ(K−1)) of the best path's evaluation per round in re-probes
	// (0: never re-probe an idle path for its age). See adaptive.
	ReprobeRounds *float64 `yaml:"reprobe_rounds"`
	// ReprobeBackoff is the most times hetquic doubles an idle path's
	// re-probe period, once per re-probe that finds the path unchanged; a
	// change detected on any path resets every period to τ (0: no backoff,
	// the period stays τ). See adaptive.
	ReprobeBackoff *int `yaml:"reprobe_backoff"`
	// ConfidentSwitch is κ of hetquic's confident switch: a path whose
	// evaluation is better than the current path's by more than κ times
	// the two confidence widths is taken whatever the hysteresis (0: the
	// hysteresis always applies). See adaptive.
	ConfidentSwitch *float64 `yaml:"confident_switch"`
	// ProbeConfidentSwitch is κ once the caller probes idle paths (from
	// hetquic's first ObserveProbe on): probes find an idle path's change
	// themselves, so the switch can trust narrower margins (0: the
	// hysteresis always applies). See adaptive.
	ProbeConfidentSwitch *float64 `yaml:"probe_confident_switch"`
	// DetectZ is the threshold, in standard errors, of hetquic's change
	// detection on each path (0: none). See adaptive.
	DetectZ *float64 `yaml:"detect_z"`
	// Alpha is UCB2's epoch growth α (Auer et al. 2002), in (0, 1).
	Alpha float64 `yaml:"alpha"`

	// Probes makes hetquic learn from out-of-band probes of idle paths
	// (ProbeObserver); false is the request-only selector. Only hetquic
	// reads it. See adaptive.ObserveProbe.
	Probes *bool `yaml:"probes"`
	// ProbeZ is the threshold, in standard errors, of the change test on
	// an idle path's probe RTTs (≥ 0; 0 treats every probe that differs by
	// more than minShift as a change).
	ProbeZ *float64 `yaml:"probe_z"`
	// ProbeStretch (≥ 1) is how many times slower the re-probe bonus of an
	// idle path grows while its probes find its RTT unchanged.
	ProbeStretch *float64 `yaml:"probe_stretch"`
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

// Default is hetquic's default strategy (the "adaptive" selector, see
// adaptive.go), chosen by measurement on the shipped offline experiments,
// stationary and not (pathsel/README.md, "The default"):
//   - PSA's evaluation r = a·E + b·σ (Eq. 18) with the unit-invariant
//     standard deviation and a = 0.8, lognormal estimates (Eq. 14–17) and
//     the optimistic bound (Eq. 19), its width scaled by a and b and its
//     horizon the samples in memory;
//   - a confidence width scaled by DefaultC;
//   - a long per-path window (DefaultWindow) for telling near-equal paths
//     apart, made safe by change detection (DefaultDetectZ) that forgets a
//     path's samples from before a change;
//   - a re-probe bonus that grows with the age of an idle path's samples
//     (DefaultReprobeRounds), so a path that got better while idle is found;
//   - a hysteresis of 10 % (defaultHysteresis), the price of a switch,
//     which also prices re-probes, waived for a path that is better with
//     confidence (DefaultConfidentSwitch), so that it cannot hold the
//     default on a path a little worse than the best for ever;
//   - out-of-band probe RTTs of idle paths, where the caller sends them
//     (ProbeObserver): an idle path whose RTT fell is tried again at once,
//     and one whose RTT did not is re-probed by request DefaultProbeStretch
//     times more rarely (DefaultProbeZ).
func Default() Config {
	return Config{
		Strategy:             Hetquic,
		A:                    ptr(0.8),
		Spread:               Std,
		Estimator:            Lognormal,
		Bound:                Optimistic,
		Window:               iptr(DefaultWindow),
		Scope:                PerPath,
		Hysteresis:           ptr(defaultHysteresis),
		ReprobeRounds:        ptr(DefaultReprobeRounds),
		ReprobeBackoff:       iptr(DefaultReprobeBackoff),
		ConfidentSwitch:      ptr(DefaultConfidentSwitch),
		ProbeConfidentSwitch: ptr(DefaultProbeConfidentSwitch),
		DetectZ:              ptr(DefaultDetectZ),
		C:                    CParam{Mode: "fixed", Value: DefaultC},
		Probes:               bptr(true),
		ProbeZ:               ptr(DefaultProbeZ),
		ProbeStretch:         ptr(DefaultProbeStretch),
	}
}

// The default's parameters, chosen by measurement (pathsel/README.md, "The
// default"): each trades regret on stationary paths for tracking change.
const (
	// DefaultWindow is the samples a path remembers. Long, so that paths
	// whose evaluations differ by a few percent under heavy jitter can be
	// told apart (a window of 30 left a jittery path 7 % worse looking
	// best for ever); change detection, not the window, forgets the past.
	DefaultWindow = 1000
	// DefaultC scales the confidence width. UCB1's own constant (1) spent
	// 1.5–3× the regret of C = 0.3 on the stationary experiments for no
	// gain on the others; 0.2 missed idle improvements more often; 0.3 left
	// pcm-window (lossy paths whose order changes) at 1.12 × the oracle,
	// 0.4 brings every shipped experiment within its bar (docs/pcm-default.md)
	// and 0.5 costs pcm-table5 more regret.
	DefaultC = 0.4
	// DefaultReprobeRounds is τ: re-probing idle paths costs at most 1 % of
	// the best path's evaluation per round, whatever the number of paths,
	// and a path that fell behind by a fraction g of the best is re-probed
	// every τ(K−1)·(g + hysteresis) rounds. With 100, a 30 → 8 ms
	// improvement of an idle path cost 1.04–1.10 × the oracle whichever of
	// six rounds it came at; 200 let it go unnoticed longer (1.06–1.14).
	DefaultReprobeRounds = 100
	// DefaultDetectZ is the change detector's threshold in standard errors.
	// At 4, false alarms on a jittery best path (about one run in five)
	// made the default leave it for hundreds of rounds; at 5 a false alarm
	// is about one in 10⁵ tests, and a 2 ms step on a 20 ms path is still
	// caught within 16 samples.
	DefaultDetectZ = 5
	// DefaultReprobeBackoff is how many times an idle path's re-probe
	// period may double: none. Backoff does what it promises on stationary
	// sets (1–4 doublings with τ 50–120 and hysteresis 7–10 % cut
	// pcm-two-paths' regret from 18.4× to 3.1–15× the best other
	// strategy's, and pcm-path-gone's from 4.2× to 1.9–3.7×), but an idle
	// path's improvement is then found only after a period that grew with
	// the rounds since the last change: with pcm-idle-improves' change moved
	// to each of rounds 125, 150, …, 725 (16 runs of 20 seeds), every
	// backoff variant measured reached 1.13–1.39 × the oracle on some of
	// them (the bar is 1.10), against at most 1.088 without backoff. One of
	// them (τ 70, one doubling, hysteresis 7 %) met the regret bar on the
	// shipped change round 300 by the luck of its schedule.
	// docs/pcm-default.md, "Re-probe backoff".
	DefaultReprobeBackoff = 0
	// DefaultConfidentSwitch is κ: the hysteresis is waived for a path
	// whose evaluation plus κ widths lies below the current path's minus κ
	// widths. Without it the 10 % hysteresis held the default for ever on a
	// path up to 10 % worse (pcm-heavy-tails: the lossy path, whose
	// lognormal fit looks 4 % worse than the steady one; pcm-near-equal:
	// the second leader after each of its re-probes). Measured on the
	// shipped offline experiments, request-only (docs/pcm-default.md):
	// κ = 1.25 cut the regret of pcm-heavy-tails from 1.29× the best other
	// strategy's to 0.94×, pcm-model's from 1.10× to 1.05×, pcm-near-equal's
	// from 3.5× to 2.2× and pcm-eight-paths' from 1.9× to 1.6×, and changed
	// no mean-TCT bar; κ = 1 did as much but raised the worst of
	// pcm-idle-improves' change rounds 125…725 to 1.103 × the oracle
	// (from 1.088); κ ≥ 2 rarely separates paths (the widths are C = 0.4
	// ones) and changed little. κ = 0.75 without probes left pcm-window at
	// 1.127 × the oracle (the bar is 1.10).
	DefaultConfidentSwitch = 1.25
	// DefaultProbeConfidentSwitch is κ once probes of idle paths arrive:
	// they find an idle path's improvement themselves, so the switch can
	// trust narrower margins. Measured with DefaultProbeStretch 100 on the
	// shipped offline experiments (20 seeds): pcm-near-equal's regret was
	// 1.93× Thompson sampling's at κ = 1.25, 1.63× at 0.9, 1.19× at 0.75
	// and 1.58× at 0.6 (the bar is 1.5×; the numbers are noisy, a few bad
	// seeds each), and every mean-TCT bar held at each, pcm-window at
	// 1.037 × the oracle with 0.75; on eight held-out sets κ = 0.75 left
	// two near-equal paths at 2.1–3.4× Thompson's regret (1.25: 3.2×).
	// docs/pcm-default-results.md, "Against the criteria".
	DefaultProbeConfidentSwitch = 0.75
	// DefaultProbeZ is the threshold, in standard errors, of the change
	// test on an idle path's probe RTTs (adaptive.ObserveProbe). Lower
	// than DefaultDetectZ because a false alarm costs one request on the
	// idle path, not a forgotten window of the active one. Measured on the
	// shipped offline experiments and eight held-out sets (5 probes/s,
	// docs/pcm-default.md, "Probes"): on a held-out set where an idle path
	// drifts down 2.2 ms every 50 rounds the default reached 1.044 ×
	// the oracle at z = 3, 1.060 at 4 and 1.126 at 6 (the bar is 1.10);
	// the suite's total regret was the same at 3 and 4 (12734, 12756).
	DefaultProbeZ = 3
	// DefaultProbeStretch is how many times slower the re-probe bonus of an
	// idle path grows while its probes find its RTT unchanged (a probe
	// does not see rate or loss, so it slows re-probes, never stops them).
	// Measured at 3, 10, 30 and 100 with κ = 1.25: pcm-two-paths' regret
	// fell from 37 to 14, 7.9 and 5.7 (the request-only default: 100)
	// while a held-out set whose idle path loses its 5 % loss went from
	// 1.096 × the oracle to 1.117, 1.140 and 1.157. That set's re-probes
	// are now paid for by the budget the stretched paths leave (ageRate in
	// Choose: 1/τ shared among the paths probes do not vouch for): with it
	// and κ = 0.75, stretches of 30, 50, 100 and 1000 left that set at
	// 1.102–1.123, 1.071–1.091, 1.075–1.090 and 1.106–1.132 × the oracle
	// over two seed sets, and pcm-two-paths at 7.9, 5.7, 5.7 and 3.4
	// (the bar: 1.5 × hetquic-v1's 5.4). 100 is the largest that keeps
	// the lossy set within 1.10.
	DefaultProbeStretch = 100
)

// maxReprobeBackoff bounds reprobe_backoff: 2^30 periods of τ ≥ 1 rounds
// is past any run.
const maxReprobeBackoff = 30

// defaultHysteresis is Default's: a switch needs a 10 % gain. On real QUIC
// a switch costs about a round trip (the probe and validation, and a
// congestion window that starts again), about one 5 KB task, so a 10 %
// better path repays it within ten tasks; it also prices the re-probe of
// an idle path (two switches), which keeps near-equal paths from being
// re-probed every few rounds. Measured: against 2 %, switches on pcm-table5
// fell from 11 to 4 per 100 rounds and the idle-path experiment improved,
// for 1.4 % more mean TCT on pcm-table5 (docs/pcm-default.md).
const defaultHysteresis = 0.10

func ptr(v float64) *float64 { return &v }
func iptr(v int) *int        { return &v }
func bptr(v bool) *bool      { return &v }

// paperDefaults are the settings of PCM journal §5.1: a = 0.8, S = 100 over
// rounds, lognormal, variance, g = 10 %, optimistic, C from Eq. 21 once, a
// path with no sample left in the window re-sampled before any ranking.
func paperDefaults() Config {
	return Config{
		A:          ptr(0.8),
		Spread:     Var,
		Estimator:  Lognormal,
		Trim:       ptr(0.10),
		Bound:      Optimistic,
		Window:     iptr(100),
		Scope:      Rounds,
		C:          CParam{Mode: "initial"},
		Resample:   bptr(true),
		Epsilon:    ptr(0.05),
		Gamma:      0.99,
		Hysteresis: ptr(0),
		// Only hetquic reads these; its own defaults are Default's.
		ReprobeRounds:        ptr(0),
		ReprobeBackoff:       iptr(0),
		ConfidentSwitch:      ptr(0),
		ProbeConfidentSwitch: ptr(0),
		DetectZ:              ptr(0),
		Probes:               bptr(false),
		ProbeZ:               ptr(DefaultProbeZ),
		ProbeStretch:         ptr(DefaultProbeStretch),
		Alpha:                0.5,
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
		d.Trim, d.Epsilon, d.Gamma, d.Resample = ptr(0.10), ptr(0.05), 0.99, bptr(true)
	case PSA, SWUCB:
	default:
		d.Window = iptr(0)
	}
	if c.A == nil {
		c.A = d.A
	}
	if c.Hysteresis == nil {
		c.Hysteresis = d.Hysteresis
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
	c.fillWindow(d)
	if c.Epsilon == nil {
		c.Epsilon = d.Epsilon
	}
	if c.Gamma == 0 {
		c.Gamma = d.Gamma
	}
	if c.ReprobeRounds == nil {
		c.ReprobeRounds = d.ReprobeRounds
	}
	if c.ReprobeBackoff == nil {
		c.ReprobeBackoff = d.ReprobeBackoff
	}
	if c.ConfidentSwitch == nil {
		c.ConfidentSwitch = d.ConfidentSwitch
	}
	if c.ProbeConfidentSwitch == nil {
		c.ProbeConfidentSwitch = d.ProbeConfidentSwitch
	}
	if c.DetectZ == nil {
		c.DetectZ = d.DetectZ
	}
	if c.Alpha == 0 {
		c.Alpha = d.Alpha
	}
	if c.Probes == nil {
		c.Probes = d.Probes
	}
	if c.ProbeZ == nil {
		c.ProbeZ = d.ProbeZ
	}
	if c.ProbeStretch == nil {
		c.ProbeStretch = d.ProbeStretch
	}
	return c
}

// fillWindow fills the window and PSA's interpretation choices from d.
func (c *Config) fillWindow(d Config) {
	if c.Window == nil {
		c.Window = d.Window
	}
	if c.Scope == "" {
		c.Scope = d.Scope
	}
	if c.C.Mode == "" {
		c.C = d.C
	}
	if c.Resample == nil {
		c.Resample = d.Resample
	}
}

// Validate reports the first bad field as "field: problem": the strategy,
// then the fields of the evaluation, then the strategies' own knobs.
func (c Config) Validate() error {
	for _, check := range []func() error{c.validateStrategy, c.validateEvaluation, c.validateKnobs, c.validateHetquic} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) validateStrategy() error {
	switch {
	case c.Strategy == "":
		return fmt.Errorf("strategy: missing")
	case !slices.Contains(Strategies, c.Strategy):
		return fmt.Errorf("strategy: unknown strategy %q (want one of %v)", c.Strategy, Strategies)
	}
	return nil
}

// validateEvaluation checks PSA's evaluation and window (Eq. 9–21).
func (c Config) validateEvaluation() error {
	switch {
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
	}
	return nil
}

// validateKnobs checks the baselines' parameters and the hysteresis.
func (c Config) validateKnobs() error {
	switch {
	case c.Epsilon != nil && !(*c.Epsilon >= 0 && *c.Epsilon <= 1):
		return fmt.Errorf("epsilon: %v is outside [0, 1]", *c.Epsilon)
	case c.Hysteresis != nil && !(*c.Hysteresis >= 0 && *c.Hysteresis < 10):
		return fmt.Errorf("hysteresis: %v is outside [0, 10)", *c.Hysteresis)
	case c.Gamma != 0 && !(c.Gamma > 0 && c.Gamma < 1):
		return fmt.Errorf("gamma: %v is outside (0, 1)", c.Gamma)
	case c.Alpha != 0 && !(c.Alpha > 0 && c.Alpha < 1):
		return fmt.Errorf("alpha: %v is outside (0, 1)", c.Alpha)
	}
	return nil
}

// validateHetquic checks the default's own knobs (adaptive.go).
func (c Config) validateHetquic() error {
	switch {
	case c.ReprobeRounds != nil && !(*c.ReprobeRounds >= 0 && *c.ReprobeRounds < 1e9):
		return fmt.Errorf("reprobe_rounds: %v is outside [0, 1e9)", *c.ReprobeRounds)
	case c.ReprobeBackoff != nil && !(*c.ReprobeBackoff >= 0 && *c.ReprobeBackoff <= maxReprobeBackoff):
		return fmt.Errorf("reprobe_backoff: %d is outside [0, %d]", *c.ReprobeBackoff, maxReprobeBackoff)
	case c.ConfidentSwitch != nil && !(*c.ConfidentSwitch >= 0 && *c.ConfidentSwitch < 1e3):
		return fmt.Errorf("confident_switch: %v is outside [0, 1000)", *c.ConfidentSwitch)
	case c.ProbeConfidentSwitch != nil && !(*c.ProbeConfidentSwitch >= 0 && *c.ProbeConfidentSwitch < 1e3):
		return fmt.Errorf("probe_confident_switch: %v is outside [0, 1000)", *c.ProbeConfidentSwitch)
	case c.DetectZ != nil && !(*c.DetectZ >= 0 && *c.DetectZ < 1e3):
		return fmt.Errorf("detect_z: %v is outside [0, 1000)", *c.DetectZ)
	case c.ProbeZ != nil && !(*c.ProbeZ >= 0 && *c.ProbeZ < 1e3):
		return fmt.Errorf("probe_z: %v is outside [0, 1000)", *c.ProbeZ)
	case c.ProbeStretch != nil && !(*c.ProbeStretch >= 1 && *c.ProbeStretch < 1e9):
		return fmt.Errorf("probe_stretch: %v is outside [1, 1e9)", *c.ProbeStretch)
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
