package report

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/ride"
	"github.com/hetquic/hetquic/ride/env"
)

// Plan is a ride experiment's points × runs: at each point, one run per
// policy (Spec.Policies order: RIDE when the spec names it, then RR, minRTT,
// Peekaboo). A file without a sweep: block has one point with no
// assignment; a sweep over seed makes the runs seeds × policies. Run
// numbers are the same in every process, which is what lets shards run
// apart and merge (internal/sweep), as for the other modes.
type Plan = sweep.Plan[*Spec, env.Metrics]

// planLoader is how internal/sweep reads and counts ride specs.
var planLoader = sweep.Loader[*Spec]{
	Load: Load,
	Extra: func(s *Spec) []string {
		if s.Ride.Policy != "" {
			return []string{s.Ride.Policy}
		}
		return nil
	},
	Sweep:    func(s *Spec) *sweep.Block { return s.Sweep },
	Scenario: func(*Spec) string { return "" },
	Same: func(base, point *Spec) error {
		if (base.policy == nil) != (point.policy == nil) {
			return fmt.Errorf("a sweep may change the RIDE policy's file, not whether one runs")
		}
		return nil
	},
	Runs: func(s *Spec) int { return numBaselines + s.rides() },
	// A ride experiment has one seed, seed (sweep it for more): no
	// SetSeeds, and exp run --seeds is refused before a Set is asked to
	// change it.
	Seeds: func(*Spec) int { return 1 },
}

// rides is 1 when the spec evaluates a RIDE policy, else 0.
func (s *Spec) rides() int {
	if s.policy != nil {
		return 1
	}
	return 0
}

// Load reads and validates ride experiment file name of fsys and the
// policy it names.
func Load(fsys fs.FS, name string) (*Spec, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	return Parse(fsys, name, data)
}

// LoadPlan reads a ride experiment as Load does and expands its sweep over
// its fields (seed, ride.frames, ride.policy, ride.max_loss).
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	return sweep.LoadPlan[*Spec, env.Metrics](fsys, name, planLoader, func(s *Spec) string { return s.Name })
}

// RunShard carries out the runs of p that shard owns on the one runner.
// A run's result depends only on its point and policy, so it is the same
// in any shard and with any number of workers; a baseline's does not
// depend on the point's RIDE policy either, so points that differ only in
// ride.policy (training seeds compared) run each baseline once.
func RunShard(ctx context.Context, p *Plan, shard sweep.Shard, opt workpool.Options) (map[int]*env.Metrics, error) {
	var base baselineRuns
	return p.RunShard(ctx, shard, opt, nil, func(ctx context.Context, pi, r int) (*env.Metrics, error) {
		s := p.Specs[pi]
		cfg := Config{Seed: s.Seed, Frames: s.Ride.Frames, MaxLoss: s.Ride.MaxLoss}
		run := func() (*env.Metrics, error) {
			pols, err := s.Policies() // fresh ones: a policy may keep state
			if err != nil {
				return nil, err
			}
			m, err := evaluate(ctx, cfg, pols[r])
			if err != nil {
				return nil, fmt.Errorf("%s%w", p.PointPrefix(pi), err)
			}
			return &m, nil
		}
		if r < s.rides() {
			return run()
		}
		return base.get(cfg, r-s.rides(), run)
	})
}

// baselineRuns shares each baseline's run among the points with the same
// evaluation (seed, frames, loss ceiling), whichever worker asks first
// running it.
type baselineRuns struct {
	mu   sync.Mutex
	runs map[baselineKey]*baselineRun
}

type baselineKey struct {
	seed      uint64
	frames, i int
	loss      float64 // −1: the models' ceiling
}

type baselineRun struct {
	once sync.Once
	m    *env.Metrics
	err  error
}

func (b *baselineRuns) get(cfg Config, i int, run func() (*env.Metrics, error)) (*env.Metrics, error) {
	k := baselineKey{seed: cfg.Seed, frames: cfg.Frames, i: i, loss: -1}
	if cfg.MaxLoss != nil {
		k.loss = *cfg.MaxLoss
	}
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[baselineKey]*baselineRun{}
	}
	e := b.runs[k]
	if e == nil {
		e = &baselineRun{}
		b.runs[k] = e
	}
	b.mu.Unlock()
	e.once.Do(func() { e.m, e.err = run() })
	return e.m, e.err
}

// Assemble gathers every run of the plan: each point's metrics, in policy
// order.
func Assemble(p *Plan, runs map[int]*env.Metrics) ([][]env.Metrics, error) {
	out := make([][]env.Metrics, len(p.Specs))
	for pi := range p.Specs {
		point, err := p.Point(runs, pi)
		if err != nil {
			return nil, err
		}
		for _, m := range point {
			out[pi] = append(out[pi], *m)
		}
	}
	return out, nil
}

// SweepSummary is summary.json of a swept ride experiment.
type SweepSummary = sweep.Summary[PointSummary]

// PointSummary is what a sweep's point holds: each policy's numbers, as in
// an unswept experiment's summary.json.
type PointSummary struct {
	Frames   int             `json:"frames"`
	Policies []PolicySummary `json:"policies"`
}

// PointSummaryFile is point i's summary.json, given its metrics: an unswept
// experiment's summary.json, or a sweep's points/ID/summary.json.
func PointSummaryFile(p *Plan, i int, ms []env.Metrics) Summary {
	s := p.Specs[i]
	return Summarize(results.NewHeader(p.Name, s.Mode, []uint64{s.Seed}), s.Ride.Frames, ms)
}

// SummarizePlan summarizes a swept plan point by point; the header's seeds
// are every point's, in point order.
func SummarizePlan(p *Plan, ms [][]env.Metrics) *SweepSummary {
	var seeds []uint64
	for _, s := range p.Specs {
		seeds = append(seeds, s.Seed)
	}
	return sweep.NewSummary(results.NewHeader(p.Name, p.Specs[0].Mode, seeds), nil, p.Design, p.Points, func(i int) PointSummary {
		ps := PointSummaryFile(p, i, ms[i])
		return PointSummary{ps.Frames, ps.Policies}
	})
}

// WritePlan writes a plan's results into dir and returns the files: for
// an experiment without a sweep, Write's figures, CSVs and report and its
// summary.json; for a sweep, summary.json, sweep.csv, a figure and
// report.md over every point (sweep.WriteOutcome), and each point's
// summary in points/ID/summary.json.
func WritePlan(dir string, p *Plan, ms [][]env.Metrics) ([]string, error) {
	if !p.Swept {
		files, err := Write(dir, ms[0], fmt.Sprintf("Experiment %s (mode ride): %s", p.Name, p.Specs[0].Description))
		if err != nil {
			return nil, err
		}
		sum := PointSummaryFile(p, 0, ms[0])
		f := filepath.Join(dir, "summary.json")
		return append(files, f), results.WriteSummaryFile(f, &sum)
	}
	point := func(i int) results.Summary { s := PointSummaryFile(p, i, ms[i]); return &s }
	sum := SummarizePlan(p, ms)
	return sweep.WriteSweep(dir, p.Points, point, sum, SweepOutcome(p, sum))
}

// SweepOutcome is what sweep.WriteOutcome draws and tabulates of a sweep:
// each policy's mean reward per frame (Fig. 5.7's measure), and its median
// viewport bitrate (Fig. 5.8) in the table.
func SweepOutcome(p *Plan, sum *SweepSummary) *sweep.Outcome {
	pol := func(pi, si int) PolicySummary { return sum.Points[pi].Data.Policies[si] }
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	o := &sweep.Outcome{
		Name: p.Name, Description: p.Specs[0].Description, Design: sum.Design, Points: p.Points,
		Columns: []string{"mean_frame_reward", "viewport_mbps_median", "throughput_mbps_median",
			"zero_rebuffering_i", "zero_rebuffering_p", "zero_rebuffering_b", "skipped_i", "skipped_p", "skipped_b"},
		Row: func(pi, si int) []string {
			s := pol(pi, si)
			return []string{num(s.MeanFrameReward), num(s.ViewportMbpsMedian), num(s.ThroughputMbps),
				num(s.ZeroRebuff[ride.I]), num(s.ZeroRebuff[ride.P]), num(s.ZeroRebuff[ride.B]),
				strconv.Itoa(s.Skipped[ride.I]), strconv.Itoa(s.Skipped[ride.P]), strconv.Itoa(s.Skipped[ride.B])}
		},
		Metric: "mean reward per frame / median viewport Mbit/s",
		YLabel: "mean reward per frame",
		Y:      func(pi, si int) float64 { return pol(pi, si).MeanFrameReward },
		Cell: func(pi, si int) string {
			s := pol(pi, si)
			return fmt.Sprintf("%.2f / %.2f", s.MeanFrameReward, s.ViewportMbpsMedian)
		},
		Setup: "One episode of the test video per policy and point.",
	}
	for _, s := range sum.Points[0].Data.Policies {
		o.Series = append(o.Series, s.Policy)
	}
	return o
}
