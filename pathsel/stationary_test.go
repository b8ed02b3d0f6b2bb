package pathsel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// stationarySet is a generated set of stationary paths: each path's task
// times are lognormal around its mean with its own spread (coefficient of
// variation), both drawn at random — not tuned examples.
type stationarySet struct {
	mean, cv []float64
}

// Generated sets' ranges: means from a LAN-like 10 ms to a satellite-like
// 300 ms, spreads from a steady wire (5 %) to a loaded radio (60 %).
const (
	genMinMean, genMaxMean = 10.0, 300.0
	genMinCV, genMaxCV     = 0.05, 0.6
	genRounds              = 2000 // requests per run: a session of small GETs
)

func genSet(k int, rng *rand.Rand) stationarySet {
	s := stationarySet{mean: make([]float64, k), cv: make([]float64, k)}
	for i := range k {
		s.mean[i] = genMinMean * math.Pow(genMaxMean/genMinMean, rng.Float64()) // log-uniform
		s.cv[i] = genMinCV + (genMaxCV-genMinCV)*rng.Float64()
	}
	return s
}

// draw is path i's task time: lognormal with the path's mean and spread.
func (s stationarySet) draw(i int, rng *rand.Rand) float64 {
	sigma := math.Sqrt(math.Log1p(s.cv[i] * s.cv[i]))
	return s.mean[i] * math.Exp(sigma*rng.NormFloat64()-sigma*sigma/2)
}

// ratioToOracle runs the default over the set for genRounds requests and
// returns its total task time over the oracle's (the best mean path every
// round), on common random numbers: both see the same draw of each path
// in each round.
func ratioToOracle(t *testing.T, cfg Config, s stationarySet, seed uint64) float64 {
	k := len(s.mean)
	sel, err := New(cfg, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		sel.AddPath(PathID(i))
	}
	best := 0
	for i := range k {
		if s.mean[i] < s.mean[best] {
			best = i
		}
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	var got, oracle float64
	round := make([]float64, k)
	for range genRounds {
		for i := range k {
			round[i] = s.draw(i, rng)
		}
		p, err := sel.Choose()
		if err != nil {
			t.Fatal(err)
		}
		got += round[p]
		oracle += round[best]
		if err := sel.Observe(p, round[p]); err != nil {
			t.Fatal(err)
		}
	}
	return got / oracle
}

// floorRatio is what a strategy that tries every path exactly once and
// then knows the best would pay over the oracle: no strategy that learns
// can do better on average.
func floorRatio(s stationarySet) float64 {
	best, sum := slices.Min(s.mean), 0.0
	for _, m := range s.mean {
		sum += m
	}
	return 1 + (sum-float64(len(s.mean))*best)/(genRounds*best)
}

// stationaryBound is the bound on the default over the oracle.
const stationaryBound = 1.05

// floorShare: the default's excess over the oracle may be at most this many
// times the floor's where the floor leaves no room under stationaryBound:
// measured 1.4 on the test's sets and at most 1.6 on the held-out ones;
// 1.75 leaves room for a change elsewhere in the default, not for second
// tries of every path (2.1 at 16 paths before loneWidth).
const floorShare = 1.75

// TestDefaultOnGeneratedStationarySets: on generated stationary sets of 2
// to 16 paths (random means and spreads, several seeds each), the
// default's total task time over the oracle's, on average over the sets of
// each size, is at most 1.05 — or, where one try of each path alone costs
// most of that (16 paths over genRounds requests: 1.045), at most
// floorShare times the floor's excess. Today 12 paths are at 1.047 and 16
// at 1.061, about 1.4 times the floor's excess (Thompson sampling: 1.066
// and 1.064); before single-sample paths kept their order (loneWidth) they
// were at 1.069 and 1.095. The distribution is logged (docs/pcm-default-results.md).
func TestDefaultOnGeneratedStationarySets(t *testing.T) {
	const seeds = 8
	for _, k := range []int{2, 3, 4, 6, 8, 12, 16} {
		var ratios []float64
		var floor, thompson float64
		for seed := range uint64(seeds) {
			set := genSet(k, rand.New(rand.NewPCG(seed, uint64(k))))
			ratios = append(ratios, ratioToOracle(t, Default(), set, seed))
			floor += floorRatio(set) / seeds
			thompson += ratioToOracle(t, Config{Strategy: Thompson}, set, seed) / seeds
		}
		slices.Sort(ratios)
		mean := 0.0
		for _, r := range ratios {
			mean += r / float64(len(ratios))
		}
		t.Logf("%2d paths: mean %.3f × oracle (min %.3f, median %.3f, max %.3f); one try of each path %.3f; thompson %.3f",
			k, mean, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], floor, thompson)
		if limit := max(stationaryBound, 1+floorShare*(floor-1)); mean > limit {
			t.Errorf("%d paths: the default is %.3f × the oracle on average (sets %s), want ≤ %.3f", k, mean, fmt.Sprint(ratios), limit)
		}
	}
}

// TestDefaultOnHeldOutStationarySets: the same bound on sets drawn from
// another stream than the test above (its seeds are no tuning target), 64
// per size in eight batches of eight; the batches' spread is logged, so
// that the test above's eight-set mean is read against it.
func TestDefaultOnHeldOutStationarySets(t *testing.T) {
	const batches, perBatch = 8, 8
	const heldOutStream = 77 // any stream other than the test above's sizes
	for _, k := range []int{2, 3, 4, 6, 8, 12, 16} {
		var means []float64
		var mean, floor float64
		for b := range uint64(batches) {
			m := 0.0
			for i := range uint64(perBatch) {
				seed := 1000 + b*perBatch + i
				set := genSet(k, rand.New(rand.NewPCG(seed, uint64(k)+heldOutStream)))
				m += ratioToOracle(t, Default(), set, seed) / perBatch
				floor += floorRatio(set) / (batches * perBatch)
			}
			means = append(means, m)
			mean += m / batches
		}
		slices.Sort(means)
		t.Logf("%2d paths: mean %.3f × oracle over %d sets (batches of %d: min %.3f, median %.3f, max %.3f); one try of each path %.3f",
			k, mean, batches*perBatch, perBatch, means[0], means[batches/2], means[batches-1], floor)
		if limit := max(stationaryBound, 1+floorShare*(floor-1)); mean > limit {
			t.Errorf("%d paths: the default is %.3f × the oracle on average over held-out sets, want ≤ %.3f", k, mean, limit)
		}
	}
}
