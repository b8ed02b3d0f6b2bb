package pathsel

import (
	"cmp"
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

// probeMode is which side probes run beside the requests.
type probeMode int

const (
	noProbes probeMode = iota
	// libProbes: pathsel.ProbeSchedule in full, the start-up sweep and
	// the selector told which probes are under way, as a pcm.Client with
	// default Probes and the experiment runner run it.
	libProbes
)

func (m probeMode) String() string {
	return [...]string{"no probes", "probes   "}[m]
}

// ratioToOracle runs the default over the set for genRounds requests and
// returns its total task time over the oracle's (the best mean path every
// round), on common random numbers: both see the same draw of each path
// in each round. With probes, a libProber sends side probes while the
// requests run (they cost the user no wait).
func ratioToOracle(t *testing.T, cfg Config, s stationarySet, seed uint64, probes probeMode) float64 {
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
	if probes != noProbes {
		// The client's connection starts on the path the default tries
		// first: the first one.
		pr, err = newLibProber(s, sel.(ProbeObserver), rand.New(rand.NewPCG(seed, 3)), 0)
		if err != nil {
			t.Fatal(err)
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
		if pr != nil {
			if err := pr.after(round[p], int(p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got / oracle
}

// probeMinScale: each generated set's probes measure its paths' task-time
// distributions scaled by one factor drawn uniformly from [probeMinScale,
// 1): a small GET takes the probe's round trip plus its transfer and the
// server's time, so on a path of ≥ 1 Mbit/s a few-KB request takes one to
// two round trips.
const probeMinScale = 0.5

// libProber models side probes while requests run back to back, on the
// user's wait as its clock, with the library's defaults (ProbeSchedule's
// ticks and DefaultProbe*), as a pcm.Client with default Probes runs them
// (Client.runProbes, AsyncProber, SideProber): ProbeSchedule in full:
//   - at the start a probe of every idle path (the start-up sweep);
//   - then a tick every 500 ms asks a probe of the next idle path in turn
//     (not the active one), unless one of that path is still out;
//   - the probes run at once, each on its own, the selector is told which
//     are under way (ProbeUnderWay), and each answer is handed over as it
//     comes back: before the next request.
//
// A probe is a tiny request on the path's side connection: one
// round trip, modelled as a draw from the path's task-time distribution
// scaled by the set's factor (so a probe takes less than a task on
// average, and its draws spread as the task's). A path whose side
// connection is not among the DefaultProbeWorkingSet most recently probed
// first pays a handshake (one more round trip); a probe whose handshake
// and round trip exceed DefaultProbeTimeoutMs measures +Inf.
type libProber struct {
	set     stationarySet
	sel     ProbeObserver
	rng     *rand.Rand
	scale   float64
	sched   *ProbeSchedule
	clock   float64 // ms: the user's wait so far
	pending []bool
	answers []libAnswer // under way, not handed over yet
	sides   []int       // open side connections, least recently probed first
}

type libAnswer struct {
	path int
	rtt  float64
	at   float64 // when it comes back
}

// newLibProber starts the model, with its start-up sweep of every path
// but active, the one the client's connection starts on.
func newLibProber(s stationarySet, sel ProbeObserver, rng *rand.Rand, active int) (*libProber, error) {
	scale := probeMinScale + (1-probeMinScale)*rng.Float64()
	p := &libProber{set: s, sel: sel, rng: rng, scale: scale,
		sched: NewProbeSchedule(DefaultProbesPerSecond), pending: make([]bool, len(s.mean))}
	for _, q := range p.sched.Sweep(len(s.mean), func(i int) bool { return i != active }) {
		if err := p.ask(0, q); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// after advances the clock by a request's wait on path active, runs the
// ticks that fell due meanwhile and hands over the answers back by now.
func (p *libProber) after(waitMs float64, active int) error {
	p.clock += waitMs
	for {
		tick, ok := p.sched.Due(p.clock)
		if !ok {
			break
		}
		if err := p.handOver(tick); err != nil {
			return err
		}
		q := p.sched.Next(len(p.pending), func(i int) bool { return i != active })
		if q >= 0 && !p.pending[q] {
			if err := p.ask(tick, q); err != nil {
				return err
			}
		}
	}
	return p.handOver(p.clock)
}

// handOver gives the selector the answers back by now, in the order they
// came back.
func (p *libProber) handOver(now float64) error {
	slices.SortStableFunc(p.answers, func(a, b libAnswer) int { return cmp.Compare(a.at, b.at) })
	n := 0
	for _, a := range p.answers {
		if a.at > now {
			break
		}
		n++
		p.pending[a.path] = false
		if err := p.sel.ObserveProbe(PathID(a.path), a.rtt); err != nil {
			return err
		}
	}
	p.answers = p.answers[n:]
	return nil
}

// ask sends a probe of path q at time now, on its own, and tells the
// selector it is under way.
func (p *libProber) ask(now float64, q int) error {
	p.pending[q] = true
	if err := p.sel.ProbeUnderWay(PathID(q), true); err != nil {
		return err
	}
	rtt := p.roundTrip(q)
	took := rtt
	if i := slices.Index(p.sides, q); i >= 0 {
		p.sides = slices.Delete(p.sides, i, i+1)
	} else {
		took += p.roundTrip(q) // the side connection's handshake
		if len(p.sides) == DefaultProbeWorkingSet {
			p.sides = p.sides[1:]
		}
	}
	p.sides = append(p.sides, q)
	if took > DefaultProbeTimeoutMs {
		rtt, took = math.Inf(1), DefaultProbeTimeoutMs
	}
	p.answers = append(p.answers, libAnswer{path: q, rtt: rtt, at: now + took})
	return nil
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

// TestDefaultOnGeneratedStationarySets: on generated stationary sets of 2
// to 16 paths (random means and spreads, several seeds each), the
// default's total task time over the oracle's, on average over the sets of
// each size, with the library's side probes (libProbes: ProbeSchedule in
// full, as pcm.Client runs it) is at most 1.05; without probes (the
// offline request-only case) at most 1.05 or, where one try of each path
// alone costs most of that, floorShare times the floor's excess. The distribution is logged
// (docs/pcm-default-results.md, "Generated stationary sets").
//
// With the probes the default tries fewer paths than all: every path is
// probed at once at the start, and the default waits for a path's answer
// before it spends a request on it (adaptive's waits), so a path whose
// probe shows it cannot pay is never tried (probeFloor). Without the
// sweep (pcm.Client before, its first probe asked after 500 ms of
// requests) the first tries covered most paths: 12 paths 1.044, 16 paths
// 1.062 on these sets.
func TestDefaultOnGeneratedStationarySets(t *testing.T) {
	const seeds = 8
	for _, probes := range []probeMode{noProbes, libProbes} {
		for _, k := range []int{2, 3, 4, 6, 8, 12, 16} {
			var ratios []float64
			var floor, thompson float64
			for seed := range uint64(seeds) {
				set := genSet(k, rand.New(rand.NewPCG(seed, uint64(k))))
				ratios = append(ratios, ratioToOracle(t, Default(), set, seed, probes))
				floor += floorRatio(set) / seeds
				thompson += ratioToOracle(t, Config{Strategy: Thompson}, set, seed, noProbes) / seeds
			}
			slices.Sort(ratios)
			mean := 0.0
			for _, r := range ratios {
				mean += r / float64(len(ratios))
			}
			t.Logf("%s %2d paths: mean %.3f × oracle (min %.3f, median %.3f, max %.3f); one try of each path %.3f; thompson %.3f",
				probes, k, mean, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], floor, thompson)
			if limit := stationaryLimit(probes, floor); mean > limit {
				t.Errorf("%s, %d paths: the default is %.3f × the oracle on average (sets %s), want ≤ %.3f", probes, k, mean, fmt.Sprint(ratios), limit)
			}
		}
	}
}

// stationaryLimit is the bound on the default's mean over the oracle: 1.05
// with probes, and without them floorShare times the floor's excess where
// one try of each path leaves no room under 1.05.
func stationaryLimit(probes probeMode, floor float64) float64 {
	if probes == libProbes {
		return stationaryBound
	}
	return max(stationaryBound, 1+floorShare*(floor-1))
}

// TestDefaultOnHeldOutStationarySets: the same bound on sets drawn from
// another stream than the test above (its seeds are no tuning target), 64
// per size in eight batches of eight; the batches' spread is logged, so
// that the test above's eight-set mean is read against it.
func TestDefaultOnHeldOutStationarySets(t *testing.T) {
	const batches, perBatch = 8, 8
	const heldOutStream = 77 // any stream other than the test above's sizes
	for _, probes := range []probeMode{noProbes, libProbes} {
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
				probes, k, mean, batches*perBatch, perBatch, means[0], means[batches/2], means[batches-1], floor)
			if limit := stationaryLimit(probes, floor); mean > limit {
				t.Errorf("%s, %d paths: the default is %.3f × the oracle on average over held-out sets, want ≤ %.3f", probes, k, mean, limit)
			}
		}
	}
}
