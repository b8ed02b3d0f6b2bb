package pathsel

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"go.yaml.in/yaml/v3"
)

func mustNew(t testing.TB, cfg Config, seed uint64) Selector {
	t.Helper()
	s, err := New(cfg, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addPaths(t testing.TB, s Selector, ids ...PathID) {
	t.Helper()
	for _, id := range ids {
		if err := s.AddPath(id); err != nil {
			t.Fatal(err)
		}
	}
}

func choose(t testing.TB, s Selector) PathID {
	t.Helper()
	p, err := s.Choose()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func observe(t testing.TB, s Selector, p PathID, x float64) {
	t.Helper()
	if err := s.Observe(p, x); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestEstimators(t *testing.T) {
	xs := []float64{4, 8, 6, 2, 100, 5, 7, 3, 9, 6}
	p := &pathStat{}
	for _, x := range xs {
		p.add(x, true)
	}
	// Plain sample mean and variance, Eq. 9–10: mean 15, Σ(x−15)² = 8070.
	g := estimator{kind: Gaussian}.of(p)
	if !near(g.mean, 15) || !near(g.variance, 8070.0/9) {
		t.Errorf("gaussian = %+v, want mean 15 var %v", g, 8070.0/9)
	}
	// g = 10 % of 10 samples drops the largest one (100): the rest has
	// mean 50/9 and Σ(x−50/9)² = 320 − 2500/9.
	p.estOK = false
	tg := estimator{kind: Gaussian, trim: 0.1}.of(p)
	if !near(tg.mean, 50.0/9) || !near(tg.variance, (320-2500.0/9)/8) {
		t.Errorf("trimmed gaussian = %+v", tg)
	}
	// Lognormal, Eq. 14–17, against a direct computation.
	var mu, s2 float64
	for _, x := range xs {
		mu += math.Log(x) / 10
	}
	for _, x := range xs {
		s2 += (math.Log(x) - mu) * (math.Log(x) - mu) / 9
	}
	p.estOK = false
	ln := estimator{kind: Lognormal}.of(p)
	if !near(ln.mean, math.Exp(mu+s2/2)) || !near(ln.variance, math.Exp(2*mu+s2)*(math.Exp(s2)-1)) {
		t.Errorf("lognormal = %+v", ln)
	}
	// One sample: variance 0, mean the sample itself.
	one := &pathStat{}
	one.add(7, false)
	if e := (estimator{kind: Lognormal}).of(one); !near(e.mean, 7) || e.variance != 0 {
		t.Errorf("one-sample lognormal = %+v, want {7 0}", e)
	}
}

func TestPSAFirstStageTriesEveryPathInOrder(t *testing.T) {
	for _, bound := range []Bound{Optimistic, Pessimistic} {
		s := mustNew(t, Config{Strategy: PSA, Bound: bound}, 1)
		addPaths(t, s, 3, 1, 2)
		for _, want := range []PathID{3, 1, 2} {
			p := choose(t, s)
			if p != want {
				t.Fatalf("%s: first stage chose %d, want %d", bound, p, want)
			}
			observe(t, s, p, 10)
		}
	}
}

// TestPSAIndicator pins Eq. 18–21 on a hand-computed case. Path 1: samples
// 10 and 12 (mean 11, var 2); path 2: one sample 14 (var 0). Gaussian, no
// trimming, a = 0.5, var: r1 = 0.5·11 + 0.5·2 = 6.5, r2 = 7, C = 6.75.
// T = 3, bonus_k = 6.75·sqrt(2 ln 3 / N_k): 7.075 for N = 2, 10.005 for N = 1.
// Optimistic: I1 = −0.575, I2 = −3.005 → path 2. Pessimistic: I1 = 13.575,
// I2 = 17.005 → path 1.
func TestPSAIndicator(t *testing.T) {
	for bound, want := range map[Bound]PathID{Optimistic: 2, Pessimistic: 1} {
		s := mustNew(t, Config{Strategy: PSA, Bound: bound, Estimator: Gaussian, Trim: ptr(0), A: ptr(0.5)}, 1)
		addPaths(t, s, 1, 2)
		observe(t, s, 1, 10)
		observe(t, s, 1, 12)
		observe(t, s, 2, 14)
		if got := choose(t, s); got != want {
			t.Errorf("%s chose %d, want %d", bound, got, want)
		}
		if c := s.(*psa).explorationC(); !near(c, 6.75) {
			t.Errorf("C = %v, want 6.75", c)
		}
	}
}

func TestPSAInitialCIsComputedOnce(t *testing.T) {
	s := mustNew(t, Config{Strategy: PSA, Estimator: Gaussian, Trim: ptr(0), A: ptr(1)}, 1).(*psa)
	addPaths(t, s, 1, 2)
	observe(t, s, 1, 10)
	observe(t, s, 2, 30)
	choose(t, s)
	if !near(s.explorationC(), 20) {
		t.Fatalf("C = %v, want 20", s.explorationC())
	}
	observe(t, s, 1, 50) // changes the means, not C
	if !near(s.explorationC(), 20) {
		t.Fatalf("initial C moved to %v", s.explorationC())
	}
	addPaths(t, s, 3) // a new path: C is computed again once it has a sample
	observe(t, s, 3, 30)
	if !near(s.explorationC(), 30) {
		t.Fatalf("C after adding a path = %v, want (30+30+30)/3", s.explorationC())
	}
}

// Without forced re-sampling, a path that aged out of the window over rounds
// is ranked with N_k = 0, an infinite bonus (PCM Eq. 19/20): the optimistic
// bound takes it as forced re-sampling would, the pessimistic one never again.
// A path never observed is still tried first (Algorithm 1's stage one).
func TestPSAResampleOff(t *testing.T) {
	for _, tc := range []struct {
		bound        Bound
		reExploresAt int
	}{{Optimistic, 5}, {Pessimistic, -1}} {
		s := mustNew(t, Config{Strategy: PSA, Bound: tc.bound, Window: iptr(5), Resample: bptr(false)}, 1)
		addPaths(t, s, 1, 2)
		observe(t, s, choose(t, s), 10) // path 1
		observe(t, s, choose(t, s), 50) // path 2, clearly worse
		got := -1
		for round := 0; round < 20; round++ {
			p := choose(t, s)
			if p == 2 && got < 0 {
				got = round
			}
			observe(t, s, p, 10)
		}
		if got != tc.reExploresAt {
			t.Errorf("%s: took the aged-out path first at round %d, want %d (-1: never)", tc.bound, got, tc.reExploresAt)
		}
		addPaths(t, s, 3)
		if p := choose(t, s); p != 3 {
			t.Errorf("%s: chose %d with path 3 never observed, want 3", tc.bound, p)
		}
	}
}

// With the window over rounds, a path unused for S rounds has no sample left
// and is explored again (PCM §5.2.3); with a per-path window it is not.
func TestWindowScopes(t *testing.T) {
	for _, tc := range []struct {
		scope        Scope
		reExploresAt int
	}{{Rounds, 5}, {PerPath, -1}} {
		s := mustNew(t, Config{Strategy: PSA, Bound: Pessimistic, Window: iptr(5), Scope: tc.scope}, 1)
		addPaths(t, s, 1, 2)
		observe(t, s, choose(t, s), 10) // path 1
		observe(t, s, choose(t, s), 50) // path 2, clearly worse
		got := -1
		for round := 0; round < 20 && got < 0; round++ {
			p := choose(t, s)
			if p == 2 {
				got = round
			}
			observe(t, s, p, 10)
		}
		if tc.reExploresAt >= 0 && got < 0 {
			t.Errorf("%s: never re-explored the aged-out path", tc.scope)
		}
		if tc.reExploresAt < 0 && got >= 0 {
			t.Errorf("%s: re-explored at round %d", tc.scope, got)
		}
		if tc.reExploresAt >= 0 && got != tc.reExploresAt {
			// The path-2 sample is the 2nd observation; with S = 5 it leaves
			// the window with the 7th, made in round 4.
			t.Errorf("%s: re-explored at round %d, want %d", tc.scope, got, tc.reExploresAt)
		}
	}
}

// The std spread keeps PSA's choices independent of the sample unit; the
// paper's variance does not (its b-term scales with the square).
func TestStdSpreadIsUnitInvariant(t *testing.T) {
	run := func(spread Spread, scale float64) []PathID {
		s := mustNew(t, Config{Strategy: PSA, Spread: spread, A: ptr(0.5)}, 1)
		addPaths(t, s, 0, 1, 2)
		env := rand.New(rand.NewPCG(7, 7))
		means := []float64{20, 22, 40}
		var seq []PathID
		for range 300 {
			p := choose(t, s)
			seq = append(seq, p)
			observe(t, s, p, scale*means[p]*math.Exp(0.3*env.NormFloat64()))
		}
		return seq
	}
	equal := func(a, b []PathID) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !equal(run(Std, 1), run(Std, 1e-3)) {
		t.Error("std spread: ms and s samples led to different choices")
	}
	if equal(run(Var, 1), run(Var, 1e-3)) {
		t.Error("var spread was expected to depend on the unit in this case")
	}
}

func TestAddRemoveKeepsOtherStatistics(t *testing.T) {
	s := mustNew(t, Config{Strategy: PSA, Bound: Pessimistic, Window: iptr(50)}, 1)
	addPaths(t, s, 1, 2)
	for range 10 {
		observe(t, s, 1, 10)
		observe(t, s, 2, 20)
	}
	addPaths(t, s, 3)
	if p := choose(t, s); p != 3 {
		t.Fatalf("new path not explored first: chose %d", p)
	}
	observe(t, s, 3, 100)
	if err := s.RemovePath(1); err != nil {
		t.Fatal(err)
	}
	// Path 2 keeps its 10 samples (better than path 3's single one).
	if p := choose(t, s); p != 2 {
		t.Fatalf("chose %d after removing path 1, want 2", p)
	}
	// Re-adding path 1 starts it afresh: its old samples, still in the
	// window, must not count for (or be subtracted from) the new one.
	addPaths(t, s, 1)
	if p := choose(t, s); p != 1 {
		t.Fatalf("re-added path not explored: chose %d", p)
	}
	for range 100 { // cycle the window several times
		observe(t, s, 2, 20)
	}
	st := s.(*psa).t.find(1)
	if st.n != 0 || st.sum != 0 {
		t.Fatalf("re-added path has n=%d sum=%v, want empty", st.n, st.sum)
	}
}

func TestErrors(t *testing.T) {
	for _, strat := range []Strategy{PSA, Polling, Random, Fixed, EpsGreedy, UCB1, SWUCB, DUCB, Thompson} {
		s := mustNew(t, Config{Strategy: strat}, 1)
		if _, err := s.Choose(); !errors.Is(err, ErrNoPaths) {
			t.Errorf("%s: Choose with no paths: %v", strat, err)
		}
		addPaths(t, s, 1)
		if err := s.AddPath(1); !errors.Is(err, ErrDuplicatePath) {
			t.Errorf("%s: duplicate add: %v", strat, err)
		}
		for _, x := range []float64{0, -1, math.NaN(), math.Inf(1)} {
			if err := s.Observe(1, x); !errors.Is(err, ErrBadSample) {
				t.Errorf("%s: Observe(%v): %v", strat, x, err)
			}
		}
		if err := s.Observe(9, 1); !errors.Is(err, ErrUnknownPath) {
			t.Errorf("%s: Observe unknown path: %v", strat, err)
		}
		if err := s.RemovePath(9); !errors.Is(err, ErrUnknownPath) {
			t.Errorf("%s: remove unknown path: %v", strat, err)
		}
	}
	if _, err := New(Config{Strategy: Random}, nil); err == nil {
		t.Error("random without a random source was accepted")
	}
}

// Every learning strategy finds the clearly best of three stationary paths:
// it takes it in most late rounds (polling would in a third). SW-UCB and
// D-UCB keep exploring by design, so the bar is a majority, not near-always.
func TestStrategiesConverge(t *testing.T) {
	means := []float64{30, 10, 25}
	for _, cfg := range []Config{
		{Strategy: PSA}, {Strategy: PSA, Bound: Pessimistic}, {Strategy: PSA, Estimator: Gaussian},
		{Strategy: Hetquic}, {Strategy: EpsGreedy}, {Strategy: UCB1}, {Strategy: SWUCB},
		{Strategy: DUCB}, {Strategy: Thompson},
	} {
		s := mustNew(t, cfg, 3)
		addPaths(t, s, 0, 1, 2)
		env := rand.New(rand.NewPCG(11, 0))
		hits := 0
		for round := range 2000 {
			p := choose(t, s)
			if round >= 1000 && p == 1 {
				hits++
			}
			observe(t, s, p, means[p]*math.Exp(0.2*env.NormFloat64()))
		}
		if hits < 600 {
			t.Errorf("%+v: best path in %d of the last 1000 rounds", cfg, hits)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, strat := range []Strategy{Random, EpsGreedy, Thompson} {
		run := func() []PathID {
			s := mustNew(t, Config{Strategy: strat}, 42)
			addPaths(t, s, 0, 1, 2)
			var seq []PathID
			for i := range 200 {
				p := choose(t, s)
				seq = append(seq, p)
				observe(t, s, p, float64(10+i%7+int(p)))
			}
			return seq
		}
		a, b := run(), run()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: runs differ at round %d", strat, i)
			}
		}
	}
}

// The running sums stay equal to a recomputation however long the run.
func TestWindowSumsDoNotDrift(t *testing.T) {
	for _, scope := range []Scope{Rounds, PerPath} {
		tr := newTracker(Config{Window: iptr(100), Scope: scope, Estimator: Gaussian, Trim: ptr(0.1)})
		for id := range PathID(3) {
			tr.AddPath(id)
		}
		env := rand.New(rand.NewPCG(5, 5))
		for range 200_000 {
			x := 1e3 * math.Exp(2*env.NormFloat64())
			if err := tr.observe(PathID(env.IntN(3)), x); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range tr.paths {
			var sum float64
			for _, x := range p.sorted {
				sum += x
			}
			if len(p.sorted) != p.n || !near(p.sum, sum) {
				t.Errorf("%s: path %d: n=%d sorted=%d sum=%v recomputed=%v", scope, p.id, p.n, len(p.sorted), p.sum, sum)
			}
		}
	}
}

func TestPollingRandomFixedOracle(t *testing.T) {
	s := mustNew(t, Config{Strategy: Polling}, 1)
	addPaths(t, s, 5, 6, 7)
	for _, want := range []PathID{5, 6, 7, 5} {
		if p := choose(t, s); p != want {
			t.Fatalf("polling chose %d, want %d", p, want)
		}
	}
	f := mustNew(t, Config{Strategy: Fixed}, 1)
	addPaths(t, f, 5, 6)
	if p := choose(t, f); p != 5 {
		t.Fatalf("fixed chose %d", p)
	}
	f.RemovePath(5)
	if p := choose(t, f); p != 6 {
		t.Fatalf("fixed after removal chose %d", p)
	}
	best := PathID(6)
	o := NewOracle(func() PathID { return best })
	addPaths(t, o, 5, 6)
	if p := choose(t, o); p != 6 {
		t.Fatalf("oracle chose %d", p)
	}
	best = 9
	if _, err := o.Choose(); !errors.Is(err, ErrUnknownPath) {
		t.Fatalf("oracle with an unavailable best path: %v", err)
	}
	r := mustNew(t, Config{Strategy: Random}, 1)
	addPaths(t, r, 0, 1)
	seen := map[PathID]bool{}
	for range 50 {
		seen[choose(t, r)] = true
	}
	if len(seen) != 2 {
		t.Fatalf("random chose only %v", seen)
	}
}

func TestRegret(t *testing.T) {
	r := NewRegret(Objective{A: 0.8, Spread: Var})
	// Round 1: best path (mean 10, var 4), sample 11.
	if inc := r.Add(Round{ChosenMean: 10, ChosenVar: 4, BestMean: 10, BestVar: 4, Sample: 11, Hit: true}); inc != 0 {
		t.Errorf("regret on the best path = %v", inc)
	}
	// Round 2: a worse path (mean 20, var 9), sample 19: r = 16+1.8 vs 8+0.8.
	if inc := r.Add(Round{ChosenMean: 20, ChosenVar: 9, BestMean: 10, BestVar: 4, Sample: 19}); !near(inc, 9) {
		t.Errorf("regret increment = %v, want 9", inc)
	}
	if !near(r.Pseudo(), 9) || r.HitRate() != 0.5 {
		t.Errorf("pseudo %v hit rate %v", r.Pseudo(), r.HitRate())
	}
	// Eq. 22: 0.8·[(11−10) + (19−10)] + 0.2·[var(11, 19) − 4] = 8 + 0.2·(16 − 4).
	if got := r.Eq22(); !near(got, 8+0.2*12) {
		t.Errorf("Eq22 = %v, want %v", got, 8+0.2*12)
	}
}

func TestConfig(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "strategy: missing"},
		{Config{Strategy: "best"}, "strategy: unknown"},
		{Config{Strategy: PSA, A: ptr(1.5)}, "a: 1.5 is outside [0, 1]"},
		{Config{Strategy: PSA, Window: iptr(-1)}, "window: S = -1"},
		{Config{Strategy: PSA, Window: iptr(0)}, "window: S = 0 must be ≥ 1"},
		{Config{Strategy: EpsGreedy, Epsilon: ptr(-0.1)}, "epsilon:"},
		{Config{Strategy: PSA, Spread: "iqr"}, "spread:"},
		{Config{Strategy: PSA, Trim: ptr(1)}, "trim:"},
		{Config{Strategy: Hetquic, ReprobeBackoff: iptr(-1)}, "reprobe_backoff: -1 is outside [0, 30]"},
		{Config{Strategy: Hetquic, ReprobeBackoff: iptr(31)}, "reprobe_backoff: 31"},
		{Config{Strategy: Hetquic, ConfidentSwitch: ptr(-1)}, "confident_switch: -1 is outside"},
		{Config{Strategy: Hetquic, ProbeConfidentSwitch: ptr(-1)}, "probe_confident_switch: -1 is outside"},
	}
	for _, tc := range bad {
		_, err := New(tc.cfg, rand.New(rand.NewPCG(1, 1)))
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
	var c Config
	if err := yaml.Unmarshal([]byte("{strategy: psa, c: 2.5, a: 0}"), &c); err != nil || c.C != (CParam{"fixed", 2.5}) || *c.A != 0 {
		t.Errorf("decode: %+v %v", c, err)
	}
	c = Config{}
	if err := yaml.Unmarshal([]byte("{strategy: hetquic, reprobe_backoff: 3, confident_switch: 0}"), &c); err != nil ||
		*c.ReprobeBackoff != 3 || *c.ConfidentSwitch != 0 || *c.Defaults().ConfidentSwitch != 0 || *Default().Defaults().ConfidentSwitch != DefaultConfidentSwitch {
		t.Errorf("decode: %+v %v", c, err)
	}
	if err := yaml.Unmarshal([]byte("{c: sometimes}"), &c); err == nil {
		t.Error("c: sometimes was accepted")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// With hysteresis PSA stays on its path unless another is clearly better.
func TestPSAHysteresis(t *testing.T) {
	for _, tc := range []struct {
		h    float64
		want PathID
	}{{0, 2}, {0.10, 1}} {
		s := mustNew(t, Config{Strategy: PSA, Bound: Pessimistic, C: CParam{Mode: "fixed"}, Estimator: Gaussian, Trim: ptr(0), A: ptr(1), Hysteresis: ptr(tc.h)}, 1)
		addPaths(t, s, 1, 2)
		observe(t, s, 2, 9.5) // path 2 is 5 % better than path 1 …
		observe(t, s, 1, 10)  // … but the connection is on path 1
		if got := choose(t, s); got != tc.want {
			t.Errorf("hysteresis %v: chose %d, want %d", tc.h, got, tc.want)
		}
	}
}

// hysteresis: 0 in an experiment file turns hysteresis off, also for the
// default strategy, whose unset hysteresis is not 0.
func TestHysteresisZeroIsNotUnset(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want float64
	}{
		{"strategy: hetquic", defaultHysteresis},
		{"strategy: hetquic\nhysteresis: 0", 0},
		{"strategy: hetquic\nhysteresis: 0.1", 0.1},
		{"strategy: psa", 0},
	} {
		var c Config
		if err := yaml.Unmarshal([]byte(tc.doc), &c); err != nil {
			t.Fatal(err)
		}
		if got := *c.Defaults().Hysteresis; got != tc.want {
			t.Errorf("%q: hysteresis %v, want %v", tc.doc, got, tc.want)
		}
	}
}
