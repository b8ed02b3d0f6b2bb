package runner

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Plan is a simulator experiment's points × runs (variant × path count ×
// seed, in Spec.jobs order). A file without a sweep: block has one point
// with no assignment. Run numbers are the same in every process, which is
// what lets shards run apart and merge (internal/sweep).
type Plan = sweep.Plan[*Spec, RunResult]

// planLoader is how internal/sweep reads and counts simulator specs.
var planLoader = sweep.Loader[*Spec]{
	Load:  LoadFS,
	Sweep: func(s *Spec) *sweep.Block { return s.Sweep },
	Extra: func(s *Spec) []string {
		if s.Topology != "" && !strings.HasPrefix(s.Topology, "builtin:") {
			return []string{s.Topology}
		}
		return nil
	},
	Scenario: func(s *Spec) string { return s.Scenario },
	Same: func(base, point *Spec) error {
		if !slices.EqualFunc(point.Variants, base.Variants, func(a, b Variant) bool { return a.Label == b.Label }) || !slices.Equal(point.PathCounts, base.PathCounts) {
			return fmt.Errorf("a sweep may change variants' settings, not which variants or path counts run")
		}
		return nil
	},
	Runs:     func(s *Spec) int { return len(s.jobs()) },
	Seeds:    func(s *Spec) int { return s.Seeds },
	SetSeeds: func(s *Spec, n int) { s.Seeds = n },
}

// LoadPlan reads a simulator experiment as LoadFS does and expands its
// sweep over its own and its scenario's fields.
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	return sweep.LoadPlan[*Spec, RunResult](fsys, name, planLoader, func(s *Spec) string { return s.Name })
}

// RunShard carries out the runs of p that shard owns on the one worker pool.
// A run's result depends only on its point, variant, path count and seed,
// so it is the same in any shard and with any number of workers.
func RunShard(ctx context.Context, p *Plan, shard sweep.Shard, workers int, progress io.Writer) (map[int]*RunResult, error) {
	opt := workpool.Options{Workers: workers, Progress: progress}
	describe := func(r *RunResult) string {
		return fmt.Sprintf("%s%s seed %d: goodput %.2f Mbit/s, end %.2f s, %d events in %.2f s wall",
			r.Label, pathsTag(r.Paths), r.Seed, r.GoodputMbps, r.EndS, r.Events, r.WallS)
	}
	return p.RunShard(ctx, shard, opt, describe, func(ctx context.Context, pi, r int) (*RunResult, error) {
		s := p.Specs[pi]
		jb := s.jobs()[r]
		run, err := s.RunOne(ctx, jb.variant, jb.paths, jb.seed)
		if err != nil {
			return nil, fmt.Errorf("%s%s seed %d: %w", p.PointPrefix(pi), s.Variants[jb.variant].Label, jb.seed, err)
		}
		return run, nil
	})
}

// Assemble turns every run of the plan into one Result per point.
func Assemble(p *Plan, runs map[int]*RunResult) ([]*Result, error) {
	out := make([]*Result, len(p.Specs))
	for pi, s := range p.Specs {
		point, err := p.Point(runs, pi)
		if err != nil {
			return nil, err
		}
		out[pi] = &Result{Spec: s, Runs: point}
	}
	return out, nil
}

// writePartial writes a shard's runs into dir (Plan.WritePartial). Wall
// time is dropped: it is the one thing a run measures that differs between
// two runs of it, and a shard run twice must compare equal.
func writePartial(p *Plan) func(dir, spec string, shard sweep.Shard, runs map[int]*RunResult) error {
	return func(dir, spec string, shard sweep.Shard, runs map[int]*RunResult) error {
		for _, r := range runs {
			r.WallS = 0
		}
		return p.WritePartial(dir, spec, shard, runs)
	}
}

// SweepSummary is summary.json of a swept simulator experiment.
type SweepSummary = sweep.Summary[PointSummary]

// PointSummary is what a sweep's point holds: each variant's summary.
type PointSummary struct {
	Summaries []Summary `json:"summaries"`
}

// SummarizePlan summarizes a swept plan point by point.
func SummarizePlan(p *Plan, res []*Result) *SweepSummary {
	first := p.Specs[0]
	return sweep.NewSummary(results.NewHeader(p.Name, "sim", results.Seeds(first.Seed, first.Seeds)), nil, p.Design, p.Points,
		func(i int) PointSummary { return PointSummary{res[i].Summaries()} })
}

// WritePlan writes a plan's results into dir: WriteAll's files for an
// experiment without a sweep; for a sweep, summary.json, sweep.csv, a figure
// and report.md over every point (sweep.WriteOutcome), and each point's
// summary in points/ID/summary.json.
func WritePlan(dir string, p *Plan, res []*Result) ([]string, error) {
	if !p.Swept {
		return WriteAll(dir, res[0])
	}
	sum := SummarizePlan(p, res)
	return sweep.WriteSweep(dir, p.Points, func(i int) results.Summary { return res[i].SummaryFile() }, sum, SweepOutcome(p, sum))
}

// SweepOutcome is what sweep.WriteOutcome draws and tabulates of a sweep:
// each variant's goodput (and mean flow completion time in the table).
func SweepOutcome(p *Plan, sum *SweepSummary) *sweep.Outcome {
	v := func(pi, si int) Summary { return sum.Points[pi].Data.Summaries[si] }
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	o := &sweep.Outcome{
		Name: p.Name, Description: p.Specs[0].Description, Design: sum.Design, Points: p.Points,
		Columns: []string{"paths", "goodput_mbps", "fct_mean_s", "delivery_delay_p90_ms", "loss_rate", "unfinished_flows"},
		Row: func(pi, si int) []string {
			s := v(pi, si)
			return []string{strconv.Itoa(s.Paths), num(s.GoodputMbps), num(s.FCTMeanS), num(s.DelayP90Ms), num(s.LossRate), strconv.Itoa(s.Unfinished)}
		},
		Metric: "goodput (Mbit/s) / mean FCT (s)",
		YLabel: "goodput (Mbit/s)",
		Y:      func(pi, si int) float64 { return v(pi, si).GoodputMbps },
		Cell:   func(pi, si int) string { s := v(pi, si); return fmt.Sprintf("%.2f / %.2f", s.GoodputMbps, s.FCTMeanS) },
		Setup:  fmt.Sprintf("%d seed(s) a point.", p.Specs[0].Seeds),
	}
	if n := p.Specs[0].Seeds; n > 1 {
		half := stats.TQuantile(0.975, n-1) / math.Sqrt(float64(n))
		o.SpreadLabel = fmt.Sprintf("95 %% interval of the mean over %d seeds", n)
		o.Spread = func(pi, si int) (float64, float64) {
			s := v(pi, si)
			return s.GoodputMbps - half*s.GoodputStdMbps, s.GoodputMbps + half*s.GoodputStdMbps
		}
	}
	for _, s := range sum.Points[0].Data.Summaries {
		o.Series = append(o.Series, s.Label+pathsTag(s.Paths))
	}
	return o
}
