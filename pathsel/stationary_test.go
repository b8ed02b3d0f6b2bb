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
// in each round. With probes, a libProber sends the library's default side
// probes while the requests run (they cost the user no wait).
func ratioToOracle(t *testing.T, cfg Config, s stationarySet, seed uint64, probes bool) float64 {
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
	var pr *libProber
	if probes {
		pr = newLibProber(s, sel.(ProbeObserver), rand.New(rand.NewPCG(seed, 3)))
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
		if pr != nil {
			if err := pr.after(round[p], int(p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got / oracle
}

// The library's default side probes (pcm/probes.go: defaultProbesPerSecond,
// defaultProbeWorkingSet, the Probes.Timeout default), which pathsel cannot
// import.
const (
	libProbeEveryMs    = 500 // two probes a second
	libProbeWorkingSet = 3
	libProbeTimeoutMs  = 1000
	// Each generated set's probes measure its paths' task-time
	// distributions scaled by one factor drawn uniformly from
	// [probeMinScale, 1): a small GET takes the probe's round trip plus
	// its transfer and the server's time, so on a path of ≥ 1 Mbit/s a
	// few-KB request takes one to two round trips.
	probeMinScale = 0.5
)

// libProber models what a pcm.Client with default Probes does while its
// requests run back to back (Client.runProbes, AsyncProber, SideProber),
// on the user's wait as its clock:
//   - a ticker every libProbeEveryMs; at each tick the answers that came
//     back since are handed to the selector (ObserveProbe), then a probe
//     of the next idle path in turn (not the active one) is asked, unless
//     one of that path is still asked or under way;
//   - one goroutine runs the probes in the order asked, one at a time;
//   - a probe is a tiny request on the path's side connection: one round
//     trip, modelled as a draw from the path's task-time distribution
//     scaled by the set's factor (so a probe takes less than a task on
//     average, and its draws spread as the task's). A path whose side
//     connection is not among the libProbeWorkingSet most recently probed
//     first pays a handshake (one more round trip); a probe whose
//     handshake and round trip exceed libProbeTimeoutMs measures +Inf.
type libProber struct {
	set      stationarySet
	sel      ProbeObserver
	rng      *rand.Rand
	scale    float64
	clock    float64 // ms: the user's wait so far
	nextTick float64
	turn     int
	busy     float64 // when the probe goroutine is free again
	pending  []bool
	answers  []libAnswer // under way or back, not handed over yet
	sides    []int       // open side connections, least recently probed first
}

type libAnswer struct {
	path int
	rtt  float64
	at   float64 // when it came back
}

func newLibProber(s stationarySet, sel ProbeObserver, rng *rand.Rand) *libProber {
	scale := probeMinScale + (1-probeMinScale)*rng.Float64()
	return &libProber{set: s, sel: sel, rng: rng, scale: scale, nextTick: libProbeEveryMs, pending: make([]bool, len(s.mean))}
}

// after advances the clock by a request's wait on path active and runs the
// ticks that fell due meanwhile.
func (p *libProber) after(waitMs float64, active int) error {
	p.clock += waitMs
	for ; p.nextTick <= p.clock; p.nextTick += libProbeEveryMs {
		if err := p.handOver(p.nextTick); err != nil {
			return err
		}
		p.ask(p.nextTick, active)
	}
	return nil
}

// handOver gives the selector the answers back by now.
func (p *libProber) handOver(now float64) error {
	kept := p.answers[:0]
	for _, a := range p.answers {
		if a.at > now {
			kept = append(kept, a)
			continue
		}
		p.pending[a.path] = false
		if err := p.sel.ObserveProbe(PathID(a.path), a.rtt); err != nil {
			return err
		}
	}
	p.answers = kept
	return nil
}

// ask probes the next idle path in turn, after the probes asked before it.
func (p *libProber) ask(now float64, active int) {
	k := len(p.pending)
	q := p.turn % k
	if q == active {
		q = (q + 1) % k
	}
	p.turn = q + 1
	if q == active || p.pending[q] {
		return
	}
	p.pending[q] = true
	rtt := p.roundTrip(q)
	took := rtt
	if i := slices.Index(p.sides, q); i >= 0 {
		p.sides = slices.Delete(p.sides, i, i+1)
	} else {
		took += p.roundTrip(q) // the side connection's handshake
		if len(p.sides) == libProbeWorkingSet {
			p.sides = p.sides[1:]
		}
	}
	p.sides = append(p.sides, q)
	if took > libProbeTimeoutMs {
		rtt, took = math.Inf(1), libProbeTimeoutMs
	}
	p.busy = max(p.busy, now) + took
	p.answers = append(p.answers, libAnswer{path: q, rtt: rtt, at: p.busy})
}

// roundTrip is one probe's round trip on path i.
func (p *libProber) roundTrip(i int) float64 {
	return p.scale * p.set.draw(i, p.rng)
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
// times the floor's where the floor leaves no room under stationaryBound
// (12 and 16 paths): without probes measured 1.4 on the test's sets and at
// most 1.6 on the held-out ones; 1.75 leaves room for a change elsewhere
// in the default, not for second tries of every path (2.1 at 16 paths
// before loneWidth).
const floorShare = 1.75

// probeFloorShare is floorShare with the library's probes: measured 1.29
// and 1.38 on the test's sets (12 and 16 paths), 1.52 and 1.36 on the
// held-out ones (12 paths: 1.0501 × the oracle). The probes come too late to
// spare the first tries (see TestDefaultOnGeneratedStationarySets), so at
// 16 paths the floor alone is 1.045–1.050.
const probeFloorShare = 1.6

// TestDefaultOnGeneratedStationarySets: on generated stationary sets of 2
// to 16 paths (random means and spreads, several seeds each), the
// default's total task time over the oracle's, on average over the sets of
// each size, without probes (the offline request-only case) and with the
// library's default side probes (libProber), is at most 1.05 — or, where
// one try of each path alone costs most of that, at most floorShare
// (probeFloorShare) times the floor's excess. The distribution is logged
// (docs/pcm-default-results.md, "Generated stationary sets").
//
// With probes the default meets 1.05 up to 12 paths; at 16 it cannot while
// it tries every path first: the library's first probe is asked after
// 500 ms of requests and answered at the next tick, 1 s in, in the order of
// the paths, by when the first tries (about 85 ms each on these sets) have
// covered most of them. Probes then decide which paths are worth a re-try
// (probeFloor), not which are worth a first one.
func TestDefaultOnGeneratedStationarySets(t *testing.T) {
	const seeds = 8
	for _, probes := range []bool{false, true} {
		for _, k := range []int{2, 3, 4, 6, 8, 12, 16} {
			var ratios []float64
			var floor, thompson float64
			for seed := range uint64(seeds) {
				set := genSet(k, rand.New(rand.NewPCG(seed, uint64(k))))
				ratios = append(ratios, ratioToOracle(t, Default(), set, seed, probes))
				floor += floorRatio(set) / seeds
				thompson += ratioToOracle(t, Config{Strategy: Thompson}, set, seed, false) / seeds
			}
			slices.Sort(ratios)
			mean := 0.0
			for _, r := range ratios {
				mean += r / float64(len(ratios))
			}
			t.Logf("%s %2d paths: mean %.3f × oracle (min %.3f, median %.3f, max %.3f); one try of each path %.3f; thompson %.3f",
				probeLabel(probes), k, mean, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], floor, thompson)
			if limit := stationaryLimit(probes, floor); mean > limit {
				t.Errorf("%s, %d paths: the default is %.3f × the oracle on average (sets %s), want ≤ %.3f", probeLabel(probes), k, mean, fmt.Sprint(ratios), limit)
			}
		}
	}
}

func probeLabel(probes bool) string {
	if probes {
		return "probes   "
	}
	return "no probes"
}

// stationaryLimit is the bound on the default's mean over the oracle: 1.05,
// or floorShare (probeFloorShare with probes) times the floor's excess
// where one try of each path leaves no room under it.
func stationaryLimit(probes bool, floor float64) float64 {
	share := floorShare
	if probes {
		share = probeFloorShare
	}
	return max(stationaryBound, 1+share*(floor-1))
}

// TestDefaultOnHeldOutStationarySets: the same bound on sets drawn from
// another stream than the test above (its seeds are no tuning target), 64
// per size in eight batches of eight; the batches' spread is logged, so
// that the test above's eight-set mean is read against it.
func TestDefaultOnHeldOutStationarySets(t *testing.T) {
	const batches, perBatch = 8, 8
	const heldOutStream = 77 // any stream other than the test above's sizes
	for _, probes := range []bool{false, true} {
		for _, k := range []int{2, 3, 4, 6, 8, 12, 16} {
			var means []float64
			var mean, floor float64
			for b := range uint64(batches) {
				m := 0.0
				for i := range uint64(perBatch) {
					seed := 1000 + b*perBatch + i
					set := genSet(k, rand.New(rand.NewPCG(seed, uint64(k)+heldOutStream)))
					m += ratioToOracle(t, Default(), set, seed, probes) / perBatch
					floor += floorRatio(set) / (batches * perBatch)
				}
				means = append(means, m)
				mean += m / batches
			}
			slices.Sort(means)
			t.Logf("%s %2d paths: mean %.3f × oracle over %d sets (batches of %d: min %.3f, median %.3f, max %.3f); one try of each path %.3f",
				probeLabel(probes), k, mean, batches*perBatch, perBatch, means[0], means[batches/2], means[batches-1], floor)
			if limit := stationaryLimit(probes, floor); mean > limit {
				t.Errorf("%s, %d paths: the default is %.3f × the oracle on average over held-out sets, want ≤ %.3f", probeLabel(probes), k, mean, limit)
			}
		}
	}
}
