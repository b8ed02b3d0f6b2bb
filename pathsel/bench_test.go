package pathsel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkRound measures one round — Choose then Observe — in steady state
// with K = 8 paths and a window of S = 100 (the target: ≤ 1 µs and
// no allocation per round).
func BenchmarkRound(b *testing.B) {
	const k = 8
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"psa-lognormal", Config{Strategy: PSA}},
		{"psa-gaussian-trim", Config{Strategy: PSA, Estimator: Gaussian}},
		{"psa-perpath", Config{Strategy: PSA, Scope: PerPath}},
		{"hetquic", Config{Strategy: Hetquic}},
		{"eps-greedy", Config{Strategy: EpsGreedy}},
		{"ucb1", Config{Strategy: UCB1}},
		{"sw-ucb", Config{Strategy: SWUCB}},
		{"d-ucb", Config{Strategy: DUCB}},
		{"thompson", Config{Strategy: Thompson}},
		{"d-thompson", Config{Strategy: DThompson}},
		{"ucb2", Config{Strategy: UCB2}},
		{"polling", Config{Strategy: Polling}},
		// The cost must not grow with the window: same PSA, 10x and 100x S.
		{"psa-lognormal-S1000", Config{Strategy: PSA, Window: iptr(1000)}},
		{"psa-lognormal-S10000", Config{Strategy: PSA, Window: iptr(10000)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := mustNew(b, tc.cfg, 1)
			for id := range PathID(k) {
				addPaths(b, s, id)
			}
			// Samples drawn up front, so the benchmark times the selector.
			env := rand.New(rand.NewPCG(2, 2))
			samples := make([]float64, 4096)
			for i := range samples {
				samples[i] = 10 * math.Exp(0.5*env.NormFloat64())
			}
			for i := range 3 * max(*tc.cfg.Defaults().Window, 1000) { // reach steady state: full window, all paths seen
				observe(b, s, choose(b, s), samples[i%len(samples)]*float64(1+i%k))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, _ := s.Choose()
				s.Observe(p, samples[i&4095]*float64(1+int(p)))
			}
		})
	}
}
