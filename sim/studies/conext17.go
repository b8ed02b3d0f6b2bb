package studies

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/sim"
)

// De Coninck & Bonaventure, "Multipath QUIC: Design and Evaluation"
// (CoNEXT 2017), §4: two-path network scenarios drawn over four classes —
// low or high bandwidth-delay product, with or without random loss — using
// the experimental design of Paasch et al. for MPTCP: per path a capacity
// of 0.1–100 Mbit/s, a round-trip time of 0–50 ms (low BDP) or 0–400 ms
// (high BDP), a maximal queuing delay of 0–100 ms (low) or 0–2000 ms
// (high), and a random loss of 0–2.5 % in the lossy classes; a 20 MB GET
// with single-path QUIC (CUBIC) on the initial path and with MPQUIC (OLIA,
// lowest-RTT scheduler). The paper draws 253 scenarios per class with WSP
// (wide spread points); we draw them uniformly at random from a fixed
// seed, a departure stated with the results.
const (
	conextBytes   = 20_000_000
	conextCap     = time.Hour // a run that has not finished by then is left out
	conextSeed    = 2017
	conextMSS     = 1500
	conextMaxRate = 100.0
	conextMinRate = 0.1
)

// ConextClass is one of the paper's four classes.
type ConextClass struct {
	Name             string
	MaxRTTms, MaxQms float64
	MaxLoss          float64
}

// ConextClasses are the paper's classes, in its order.
var ConextClasses = []ConextClass{
	{"low-BDP-no-loss", 50, 100, 0},
	{"low-BDP-losses", 50, 100, 0.025},
	{"high-BDP-no-loss", 400, 2000, 0},
	{"high-BDP-losses", 400, 2000, 0.025},
}

// conextPath is one sampled path.
type conextPath struct {
	RateMbps, RTTms, Qms, Loss float64
}

// ConextResult is one class's outcome.
type ConextResult struct {
	Class ConextClass
	N     int // scenarios whose runs all finished
	// Ratio is single-path completion time over multipath's, per scenario
	// (> 1: multipath faster), sorted; for the initial path being the
	// scenario's first path (a random one of the two).
	Ratio []float64
	// Benefit is Kaspar's experimental aggregation benefit per scenario
	// (the paper's EXP-Ben): (g − g_max)/(g_sum − g_max) when multipath's
	// goodput g beats the best single path's g_max, else (g − g_max)/g_max;
	// sorted. 1: perfect aggregation, 0: as the best path alone.
	Benefit []float64
	// BenefitCubic is the same with uncoupled CUBIC on each path instead
	// of OLIA: whether a gap comes from the coupled controller.
	BenefitCubic []float64
}

// Conext17 samples n scenarios per class and runs them on workers
// goroutines (≤ 0: all cores); results do not depend on workers.
func Conext17(ctx context.Context, n, workers int) ([]ConextResult, error) {
	if n < 1 || n > 10000 {
		return nil, fmt.Errorf("scenarios: %d is outside [1, 10000]", n)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type job struct {
		class, i int
		paths    [2]conextPath
	}
	var jobs []job
	for ci, cl := range ConextClasses {
		rng := rand.New(rand.NewPCG(conextSeed, uint64(ci)))
		for i := 0; i < n; i++ {
			var ps [2]conextPath
			for k := range ps {
				ps[k] = conextPath{
					// capacity log-uniform would favour small rates; the
					// design draws each factor uniformly over its range.
					RateMbps: conextMinRate + rng.Float64()*(conextMaxRate-conextMinRate),
					RTTms:    rng.Float64() * cl.MaxRTTms,
					Qms:      rng.Float64() * cl.MaxQms,
					Loss:     rng.Float64() * cl.MaxLoss,
				}
			}
			jobs = append(jobs, job{ci, i, ps})
		}
	}
	// Four runs per scenario: single path on path 0, on path 1, multipath
	// with OLIA, multipath with uncoupled CUBIC.
	type out struct{ sp0, sp1, mp, mpc float64 }
	outs := make([]out, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				jb := jobs[j]
				seed := uint64(jb.class*100000 + jb.i + 1)
				var o out
				var err error
				if o.sp0, err = conextRun(seed, jb.paths[:1], "cubic"); err == nil {
					if o.sp1, err = conextRun(seed, jb.paths[1:], "cubic"); err == nil {
						if o.mp, err = conextRun(seed, jb.paths[:], "olia"); err == nil {
							o.mpc, err = conextRun(seed, jb.paths[:], "cubic")
						}
					}
				}
				outs[j], errs[j] = o, err
			}
		}()
	}
	for j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := make([]ConextResult, len(ConextClasses))
	for ci := range res {
		res[ci].Class = ConextClasses[ci]
	}
	for j, jb := range jobs {
		if errs[j] != nil {
			return nil, errs[j]
		}
		o := outs[j]
		if o.sp0 <= 0 || o.sp1 <= 0 || o.mp <= 0 || o.mpc <= 0 {
			continue // did not finish within the cap
		}
		r := &res[jb.class]
		r.N++
		r.Ratio = append(r.Ratio, o.sp0/o.mp)
		r.Benefit = append(r.Benefit, expBenefit(o.mp, o.sp0, o.sp1))
		r.BenefitCubic = append(r.BenefitCubic, expBenefit(o.mpc, o.sp0, o.sp1))
	}
	for i := range res {
		slices.Sort(res[i].Ratio)
		slices.Sort(res[i].Benefit)
		slices.Sort(res[i].BenefitCubic)
	}
	return res, nil
}

// expBenefit is Kaspar's experimental aggregation benefit from the
// multipath and the two single-path completion times of one transfer
// (goodputs are their inverses up to the common size).
func expBenefit(mp, sp0, sp1 float64) float64 {
	g, g0, g1 := 1/mp, 1/sp0, 1/sp1
	gmax := max(g0, g1)
	if g >= gmax {
		return (g - gmax) / (g0 + g1 - gmax)
	}
	return (g - gmax) / gmax
}

// conextRun is one 20 MB GET over paths; it returns the completion time
// in s, or 0 when it did not finish within conextCap.
func conextRun(seed uint64, paths []conextPath, ccName string) (float64, error) {
	s := sim.New(seed)
	var specs []sim.PathSpec
	for k, p := range paths {
		owd := time.Duration(p.RTTms / 2 * float64(time.Millisecond))
		// The queue holds the path's maximal queuing delay at its capacity.
		q := max(2, int(math.Ceil(p.RateMbps*1e6/8*p.Qms/1e3/conextMSS)))
		name := fmt.Sprintf("p%d", k)
		fwd := sim.NewLink(s, name+"/down", sim.LinkParams{Delay: owd, RateBps: p.RateMbps * 1e6, QueuePkts: q, Loss: p.Loss})
		rev := sim.NewLink(s, name+"/up", sim.LinkParams{Delay: owd, RateBps: p.RateMbps * 1e6, QueuePkts: q})
		specs = append(specs, sim.PathSpec{Name: name, Fwd: []*sim.Link{fwd}, Rev: []*sim.Link{rev}})
	}
	cfg := sim.ConnConfig{PacketBytes: conextMSS, CC: ccName, Scheduler: "single"}
	if len(paths) > 1 {
		cfg.Scheduler = "minrtt"
	}
	done, err := transferTime(s, cfg, specs, conextBytes, conextCap)
	return done.Seconds(), err
}

// transferTime runs one download of bytes over specs with cfg and returns
// when its last byte was delivered (0: not within limit).
func transferTime(s *sim.Sim, cfg sim.ConnConfig, specs []sim.PathSpec, bytes int64, limit time.Duration) (time.Duration, error) {
	c, err := sim.NewConn(s, cfg, specs)
	if err != nil {
		return 0, err
	}
	var done time.Duration
	c.Receiver().OnStream = func(e sim.StreamEvent) {
		done = e.At
		s.Stop()
	}
	if _, err := c.OpenStream(bytes, sim.StreamOpts{}); err != nil {
		return 0, err
	}
	s.Run(limit, 0, nil)
	return done, nil
}

// WriteConext17Table renders the per-class distributions as markdown.
func WriteConext17Table(w io.Writer, res []ConextResult, n int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d scenarios per class (the paper: 253, WSP-drawn; here uniform from seed %d), 20 MB GET; single path: CUBIC on the initial path; multipath: OLIA, lowest-RTT scheduler.\n\n", n, conextSeed)
	b.WriteString("| class | scenarios | single/multi time ratio p10 / p25 / p50 / p75 / p90 | multipath faster | EXP-Ben p25 / p50 / p75 | EXP-Ben > 0 | EXP-Ben p50, uncoupled CUBIC |\n|---|---|---|---|---|---|---|\n")
	for _, r := range res {
		q := func(x []float64, p float64) float64 { // x is sorted; 0 when empty
			if v := stats.Quantile(x, p); !math.IsNaN(v) {
				return v
			}
			return 0
		}
		faster, pos := 0, 0
		for _, x := range r.Ratio {
			if x > 1 {
				faster++
			}
		}
		for _, x := range r.Benefit {
			if x > 0 {
				pos++
			}
		}
		share := func(k int) float64 {
			if r.N == 0 {
				return 0
			}
			return 100 * float64(k) / float64(r.N)
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f / %.2f / %.2f / %.2f / %.2f | %.0f %% | %.2f / %.2f / %.2f | %.0f %% | %.2f |\n",
			r.Class.Name, r.N, q(r.Ratio, .1), q(r.Ratio, .25), q(r.Ratio, .5), q(r.Ratio, .75), q(r.Ratio, .9), share(faster),
			q(r.Benefit, .25), q(r.Benefit, .5), q(r.Benefit, .75), share(pos), q(r.BenefitCubic, .5))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
