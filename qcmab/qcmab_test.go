package qcmab

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/akf"
)

// The bandwidth AKF through the Refiner: 12 Mbit/s measured with σ = 1
// Mbit/s noise settles within 0.5 Mbit/s; a step to 4 Mbit/s (a handover to
// a weaker AP) is followed to within 10 % in at most 3·akf.Window = 24
// updates (3.6 s of frames), the bound this test states.
func TestRefinerBandwidthAKF(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var r Refiner
	const dt = 0.15
	obs := func(mbps float64) Context {
		bytes := max(mbps+rng.NormFloat64(), 0) * 1e6 / 8 * dt
		c, err := r.Observe(bytes, dt, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var c Context
	for range 200 {
		c = obs(12)
	}
	if math.Abs(c.BandwidthMbps-12) > 0.5 {
		t.Fatalf("constant 12 Mbit/s: estimate %.2f", c.BandwidthMbps)
	}
	n := 0
	for ; n < 100; n++ {
		if c = obs(4); math.Abs(c.BandwidthMbps-4) < 0.4 {
			break
		}
	}
	if n+1 > 3*akf.Window {
		t.Fatalf("step 12 → 4 Mbit/s followed in %d updates, want ≤ %d", n+1, 3*akf.Window)
	}
}

func TestRefinerEWMA(t *testing.T) {
	var r Refiner
	r.Observe(1000, 1, 100, 0.01)
	c, _ := r.Observe(1000, 1, 20, 0.11)
	// Eq. 4.17: 1/8·20 + 7/8·100 = 90; Eq. 4.18: 0.6·0.11 + 0.4·0.01 = 0.07.
	if math.Abs(c.OWDms-90) > 1e-9 || math.Abs(c.Loss-0.07) > 1e-12 {
		t.Fatalf("EWMA: owd %v loss %v, want 90, 0.07", c.OWDms, c.Loss)
	}
	raw := Refiner{Raw: true}
	raw.Observe(1000, 1, 100, 0.01)
	c, _ = raw.Observe(1500, 0.5, 20, 0.11)
	if c != (Context{0.024, 20, 0.11}) {
		t.Fatalf("raw: %+v, want the sample itself (Eq. 4.10: 1500·8/0.5 = 0.024 Mbit/s)", c)
	}
	if _, err := r.Observe(1, 0, 1, 0); err == nil {
		t.Fatal("interval 0 accepted")
	}
	if _, err := r.Observe(1, 1, 1, 2); err == nil {
		t.Fatal("loss 2 accepted")
	}
}

func TestPartition(t *testing.T) {
	th := DefaultThresholds
	for _, tc := range []struct {
		c    Context
		want int
	}{
		{Context{0, 0, 0}, 0},
		{Context{4.99, 89.9, 0.00009}, 0},
		{Context{5, 90, 0.0001}, 9 + 3 + 1}, // thresholds belong to the upper interval
		{Context{9.99, 149, 0.00099}, 13},
		{Context{10, 150, 0.001}, 26},
		{Context{100, 10, 0.5}, 18 + 0 + 2},
		{Context{7, 200, 0}, 9 + 6},
	} {
		if got := th.Cell(tc.c); got != tc.want {
			t.Errorf("Cell(%+v) = %d, want %d", tc.c, got, tc.want)
		}
	}
	custom := Thresholds{[2]float64{1, 2}, [2]float64{10, 20}, [2]float64{0.1, 0.2}}
	if got := custom.Cell(Context{1.5, 25, 0.05}); got != 9+6+0 {
		t.Errorf("custom thresholds: cell %d, want 15", got)
	}
}

// Eq. 4.19 on hand-computed frames, Γ = 0.9.
func TestReward(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     Frame
		gamma float64
		want  float64
	}{
		{"all on time", Frame{10, 20, 10, 20}, 0.9, 1},
		{"γ_f = 0.9 meets Γ: EL counts fully", Frame{10, 20, 9, 15}, 0.9, 24.0 / 30},
		{"γ_f = 0.8 < Γ, 2 late BL: η = ½", Frame{10, 20, 8, 20}, 0.9, (8 + 0.5*20) / 30},
		{"γ_f = 0.5 < Γ, 5 late BL: η = ⅕", Frame{10, 10, 5, 10}, 0.9, (5 + 0.2*10) / 20},
		{"one late BL under Γ = 1: η = 1", Frame{4, 4, 3, 4}, 1, 7.0 / 8},
		{"nothing on time", Frame{4, 4, 0, 0}, 0.9, 0},
		{"no BL packets: γ_f = 1", Frame{0, 5, 0, 3}, 0.99, 3.0 / 5},
	} {
		got, err := Reward(tc.f, tc.gamma)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Reward = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, f := range []Frame{{1, 1, 2, 0}, {0, 0, 0, 0}, {-1, 2, 0, 0}} {
		if _, err := Reward(f, 0.9); err == nil {
			t.Errorf("frame %+v accepted", f)
		}
	}
}

// TestRewardGammaLevels: where Γ = 90, 95 and 99 % give a frame the same
// reward (so UCB takes the same decisions) and where they do not. Γ enters
// QC-MAB only through Eq. 4.19: it can matter only when at least two BL
// packets are late (one late packet gives η = 1, the full reward) and yet
// the on-time share reaches the lower Γ, which needs ≥ 20 BL packets for
// 90 % against 99 %, ≥ 40 for 95 % against 99 %. A frame whose BL arrives
// whole or loses many packets is rewarded alike at every level.
func TestRewardGammaLevels(t *testing.T) {
	for _, tc := range []struct {
		name           string
		f              Frame
		same90, same95 bool // reward at Γ = 0.90 / 0.95 equals Γ = 0.99's
	}{
		{"all on time", Frame{49, 74, 49, 74}, true, true},
		{"one late BL: η = 1 at every level", Frame{49, 74, 48, 74}, true, true},
		{"most of the BL late", Frame{49, 74, 10, 30}, true, true},
		{"two late of 10: below every level", Frame{10, 15, 8, 15}, true, true},
		{"two late of 23 (91 %): only Γ = 90 % is met", Frame{23, 35, 21, 35}, false, true},
		{"two late of 49 (96 %): Γ = 90 and 95 % are met", Frame{49, 74, 47, 74}, false, false},
		{"five late of 107 (95.3 %)", Frame{107, 160, 102, 160}, false, false},
	} {
		r := func(g float64) float64 {
			v, err := Reward(tc.f, g)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if got90, got95 := r(0.90) == r(0.99), r(0.95) == r(0.99); got90 != tc.same90 || got95 != tc.same95 {
			t.Errorf("%s: same reward as Γ = 99 %% at 90 %% %v, at 95 %% %v; want %v, %v", tc.name, got90, got95, tc.same90, tc.same95)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	base := DefaultConfig("wifi", "5g")
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"bandwidth not increasing", func(c *Config) { c.Thresholds.BandwidthMbps = [2]float64{10, 5} }, "bandwidth thresholds"},
		{"owd equal", func(c *Config) { c.Thresholds.OWDms = [2]float64{90, 90} }, "owd thresholds"},
		{"loss negative", func(c *Config) { c.Thresholds.Loss = [2]float64{-1, 0.1} }, "loss thresholds"},
		{"Γ = 0", func(c *Config) { c.Gamma = 0 }, "reliability Γ"},
		{"Γ > 1", func(c *Config) { c.Gamma = 1.01 }, "reliability Γ"},
		{"unknown arm", func(c *Config) { c.Arms = []string{"wifi", "lte+fec"} }, `unknown arm "lte+fec"`},
		{"policy", func(c *Config) { c.Policy = "greedy" }, "unknown policy"},
		{"discount", func(c *Config) { c.Policy, c.Discount = DUCB, 1.5 }, "discount"},
		{"duplicate network", func(c *Config) { c.Networks = []string{"a", "a"} }, "distinct"},
	} {
		c := base
		c.Networks = append([]string(nil), base.Networks...)
		tc.mod(&c)
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	a, err := New(Config{Networks: []string{"wifi", "5g"}, Arms: []string{"5g+fec", "wifi"}, Thresholds: DefaultThresholds, Gamma: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.ArmNames(); len(got) != 2 || got[0] != "5g+fec" || got[1] != "wifi" {
		t.Fatalf("arms %v", got)
	}
}

// UCB choice worked by hand (Eq. 4.21): two arms in one cell after t − 1 = 4
// rewards: arm A 3 plays, total 2.4 (mean 0.8); arm B 1 play, reward 0.5.
// H_A = 0.8 + √(2 ln 5 / 3) = 0.8 + 1.036 = 1.836;
// H_B = 0.5 + √(2 ln 5 / 1) = 0.5 + 1.794 = 2.294 → B.
// Five more rewards of 0.9 on A (t − 1 = 9 … no: B is chosen next); instead
// give B a 0 and check A wins: A 3 plays/2.4, B 2 plays/0.5, t = 6:
// H_A = 0.8 + √(2 ln 6/3) = 1.846; H_B = 0.25 + √(ln 6) = 1.589 → A.
func TestUCBChoiceByHand(t *testing.T) {
	a, _ := New(Config{Networks: []string{"A", "B"}, Arms: []string{"A", "B"}, Thresholds: DefaultThresholds, Gamma: 0.9})
	rng := rand.New(rand.NewPCG(1, 2))
	cands := []Candidate{{0, Context{20, 50, 0}}, {1, Context{20, 50, 0}}}
	q := DefaultThresholds.Cell(cands[0].Ctx)
	feed := func(arm int, r float64) {
		a.last = &pendingChoice{arm: arm, cell: q}
		if err := a.Learn(r); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, 0.8)
	feed(0, 0.8)
	feed(0, 0.8)
	feed(1, 0.5)
	if d, _ := a.Choose(cands, rng); d.Arm.Network != 1 {
		t.Fatalf("t=5: chose %v, want B (H_B 2.294 > H_A 1.836)", d.Arm)
	}
	a.Learn(0)
	if d, _ := a.Choose(cands, rng); d.Arm.Network != 0 || d.Propensity != 1 {
		t.Fatalf("t=6: chose %+v, want A with propensity 1 (H_A 1.846 > H_B 1.589)", d)
	}
	// A different cell has no history: both arms untried, a fair coin.
	far := []Candidate{{0, Context{1, 200, 0.5}}, {1, Context{1, 200, 0.5}}}
	d, _ := a.Choose(far, rng)
	if d.Propensity != 0.5 || d.Cell == q {
		t.Fatalf("new cell: %+v, want propensity ½ in another cell", d)
	}
}

// §4.4.2: a network whose τ̂ exceeds ΔT is not a candidate, unless no
// network is within it.
func TestDeadlineFilter(t *testing.T) {
	a, _ := New(DefaultConfig("wifi", "5g"))
	rng := rand.New(rand.NewPCG(3, 3))
	for range 50 {
		d, err := a.Choose([]Candidate{{0, Context{20, 200, 0}}, {1, Context{20, 40, 0}}}, rng)
		if err != nil || d.Arm.Network != 1 {
			t.Fatalf("chose %+v, %v; want 5g (wifi's τ̂ 200 ms > 150)", d, err)
		}
		a.Learn(1)
	}
	if _, err := a.Choose([]Candidate{{0, Context{20, 200, 0}}}, rng); err != nil {
		t.Fatalf("only a late network: %v, want it chosen anyway", err)
	}
	if _, err := a.Choose(nil, rng); err == nil {
		t.Fatal("no candidates accepted")
	}
}

// The FEC bit reaches the server one decision late; the network acts now.
func TestFECOneRoundLate(t *testing.T) {
	a, _ := New(Config{Networks: []string{"n"}, Arms: []string{"n+fec"}, Thresholds: DefaultThresholds, Gamma: 0.9})
	rng := rand.New(rand.NewPCG(1, 1))
	c := []Candidate{{0, Context{20, 20, 0}}}
	d, _ := a.Choose(c, rng)
	if !d.Arm.FEC || d.SenderFEC {
		t.Fatalf("first frame: %+v, want FEC chosen but not yet at the sender", d)
	}
	a.Learn(1)
	if d, _ = a.Choose(c, rng); !d.SenderFEC {
		t.Fatalf("second frame: %+v, want the sender using FEC", d)
	}
}

// env is a synthetic two-network world: each arm's reward is Bernoulli
// with a mean that depends on the arm and on a phase that flips halfway.
func envReward(rng *rand.Rand, arm Arm, phase int) float64 {
	means := [2][4]float64{{0.9, 0.7, 0.3, 0.2}, {0.2, 0.3, 0.7, 0.9}}
	i := 2*arm.Network + map[bool]int{false: 0, true: 1}[arm.FEC]
	if rng.Float64() < means[phase][i] {
		return 1
	}
	return 0
}

// After 1000 frames in phase 0 the world flips; discounted UCB forgets
// the old phase and plays the new best arm (b+fec) more often than not
// within 300 frames (60 % of frames 300–500 after the flip with γ = 0.995).
func TestDUCBForgets(t *testing.T) {
	share := 0.0
	for seed := range uint64(5) {
		cfg := DefaultConfig("a", "b")
		cfg.Policy = DUCB
		a, _ := New(cfg)
		rng := rand.New(rand.NewPCG(seed, 1))
		cands := []Candidate{{0, Context{20, 50, 0}}, {1, Context{20, 50, 0}}}
		for i := range 1500 {
			phase := 0
			if i >= 1000 {
				phase = 1
			}
			d, _ := a.Choose(cands, rng)
			if i >= 1300 && d.Arm == (Arm{1, true}) {
				share += 1.0 / 200 / 5
			}
			a.Learn(envReward(rng, d.Arm, phase))
		}
	}
	if share < 0.5 {
		t.Fatalf("DUCB plays the new best arm %.2f of frames 300–500 after the flip, want ≥ 0.5", share)
	}
}

// LinUCB generalises across contexts: trained where arm a pays b/20 and
// arm b pays 1 − b/20 at b ∈ {2, 18} Mbit/s, it picks correctly at 4 and
// 16 Mbit/s, which it never saw and which fall in other cells.
func TestLinUCBGeneralises(t *testing.T) {
	cfg := DefaultConfig("a", "b")
	cfg.Policy = LinUCB
	cfg.Arms = []string{"a", "b"}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	at := func(b float64) []Candidate { return []Candidate{{0, Context{b, 50, 0}}, {1, Context{b, 50, 0}}} }
	for i := range 600 {
		b := []float64{2, 18}[i%2]
		d, _ := a.Choose(at(b), rng)
		r := b / 20
		if d.Arm.Network == 1 {
			r = 1 - b/20
		}
		a.Learn(r)
	}
	for _, tc := range []struct {
		b    float64
		want int
	}{{4, 1}, {16, 0}} {
		d, _ := a.Choose(at(tc.b), rng)
		a.Skip()
		if d.Arm.Network != tc.want {
			t.Errorf("b = %v Mbit/s: chose network %d, want %d", tc.b, d.Arm.Network, tc.want)
		}
	}
}

// Replay on a uniform log estimates a fixed policy's value: always arm
// (b, FEC) in phase 1 of env has mean 0.9.
func TestReplayUniformLog(t *testing.T) {
	cfg := DefaultConfig("a", "b")
	cfg.Epsilon = 1
	logger, _ := New(cfg)
	rng := rand.New(rand.NewPCG(4, 4))
	cands := []Candidate{{0, Context{20, 50, 0}}, {1, Context{20, 50, 0}}}
	var log []LogEntry
	for range 4000 {
		d, _ := logger.Choose(cands, rng)
		if d.Propensity != 0.25 {
			t.Fatalf("uniform logger propensity %v, want ¼", d.Propensity)
		}
		r := envReward(rng, d.Arm, 1)
		logger.Learn(r)
		log = append(log, LogEntry{cands, d.Arm, d.Propensity, r})
	}
	fixed, _ := New(Config{Networks: []string{"a", "b"}, Arms: []string{"b+fec"}, Thresholds: DefaultThresholds, Gamma: 0.9})
	est, err := Replay(fixed, log, rng)
	if err != nil {
		t.Fatal(err)
	}
	if est.Accepted != 4000 || est.Matched < 900 || math.Abs(est.Mean-0.9) > 0.03 {
		t.Fatalf("replay of the always-(b+fec) policy: %+v, want ≈ 0.9 over ≈ 1000 matches", est)
	}
	// A learning policy scores between the worst and best arm, and well above
	// the uniform logger's own mean (0.525).
	learner, _ := New(DefaultConfig("a", "b"))
	est, _ = Replay(learner, log, rng)
	if !(est.Mean > 0.7 && est.Mean < 0.9) {
		t.Fatalf("replay of UCB: %+v, want mean in (0.7, 0.9)", est)
	}
	if _, err := Replay(learner, []LogEntry{{cands, Arm{}, 0, 0.5}}, rng); err == nil {
		t.Fatal("propensity 0 accepted")
	}
}
