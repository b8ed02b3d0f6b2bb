package layeredvideo

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Plan is a video experiment's points × runs (AP spacing × variant × seed,
// then the replay logger's seeds, in Spec.jobs order). A file without a
// sweep: block has one point with no assignment. Run numbers are the same
// in every process, which is what lets shards run apart and merge
// (internal/sweep), as for the other modes.
type Plan = sweep.Plan[*Spec, Result]

// planLoader is how internal/sweep reads and counts video specs. The
// scenario is written inline, so a sweep's scenario.… fields are the
// spec's own.
var planLoader = sweep.Loader[*Spec]{
	Load:     LoadFS,
	Sweep:    func(s *Spec) *sweep.Block { return s.Sweep },
	Extra:    func(*Spec) []string { return nil },
	Scenario: func(*Spec) string { return "" },
	Same: func(base, point *Spec) error {
		if !slices.EqualFunc(point.Variants, base.Variants, func(a, b VariantSpec) bool { return a.Label == b.Label }) ||
			!slices.Equal(point.SweepSpacingM, base.SweepSpacingM) || point.Replay != base.Replay {
			return fmt.Errorf("a sweep may change variants' settings, not which variants, AP spacings or replay run")
		}
		return nil
	},
	Runs:     func(s *Spec) int { return len(s.jobs()) },
	Seeds:    func(s *Spec) int { return s.Seeds },
	SetSeeds: func(s *Spec, n int) { s.Seeds = n },
}

// LoadPlan reads a video experiment as LoadFS does and expands its sweep
// over its fields (the inline scenario's among them).
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	return sweep.LoadPlan[*Spec, Result](fsys, name, planLoader, func(s *Spec) string { return s.Name })
}

// RunShard carries out the runs of p that shard owns on the one worker pool. A
// run's result depends only on its point, AP spacing, variant and seed, so
// it is the same in any shard and with any number of workers.
func RunShard(ctx context.Context, p *Plan, shard sweep.Shard, opt workpool.Options) (map[int]*Result, error) {
	return p.RunShard(ctx, shard, opt, nil, func(ctx context.Context, pi, r int) (*Result, error) {
		s := p.Specs[pi]
		jb := s.jobs()[r]
		res, err := s.run(ctx, jb)
		if err != nil {
			return nil, fmt.Errorf("%s%s seed %d: %w", p.PointPrefix(pi), jb.v.Label, jb.seed, err)
		}
		return res, nil
	})
}

// Assemble summarizes every run of the plan, one Summary per point.
func Assemble(p *Plan, runs map[int]*Result) ([]*Summary, error) {
	out := make([]*Summary, len(p.Specs))
	for pi, s := range p.Specs {
		rs, err := p.Point(runs, pi)
		if err != nil {
			return nil, err
		}
		sum, err := summarize(s, rs)
		if err != nil {
			return nil, fmt.Errorf("%s%w", p.PointPrefix(pi), err)
		}
		out[pi] = sum
	}
	return out, nil
}

// SweepSummary is summary.json of a swept video experiment; its Info is
// a sweepInfo.
type SweepSummary = sweep.Summary[PointSummary]

// sweepInfo is what holds for every point of a video sweep.
type sweepInfo struct {
	Figure    string  `json:"figure"`
	DurationS float64 `json:"duration_s"`
}

// PointSummary is what a sweep's point holds: its rows (each variant × AP
// spacing), as in an unswept experiment's summary.json.
type PointSummary struct {
	Rows        []Row   `json:"rows"`
	UniformMean float64 `json:"uniform_logger_reward,omitempty"`
}

// SummarizePlan summarizes a swept plan point by point.
func SummarizePlan(p *Plan, sums []*Summary) *SweepSummary {
	first := sums[0]
	return sweep.NewSummary(first.Header, sweepInfo{first.Figure, first.DurationS}, p.Design, p.Points,
		func(i int) PointSummary { return PointSummary{sums[i].Rows, sums[i].UniformMean} })
}

// WritePlan writes a plan's results into dir: WriteAll's files for an
// experiment without a sweep; for a sweep, summary.json, sweep.csv, a
// figure and report.md over every point (sweep.WriteOutcome), and each
// point's summary in points/ID/summary.json.
func WritePlan(dir string, p *Plan, sums []*Summary) ([]string, error) {
	if !p.Swept {
		return WriteAll(dir, p.Specs[0], sums[0])
	}
	sum := SummarizePlan(p, sums)
	return sweep.WriteSweep(dir, p.Points, func(i int) results.Summary { return sums[i] }, sum, SweepOutcome(p, sum))
}

// SweepOutcome is what sweep.WriteOutcome draws and tabulates of a sweep:
// each row's (variant's, at each AP spacing) interruption ratio, the
// thesis's headline metric, and its mean quality in the table.
func SweepOutcome(p *Plan, sum *SweepSummary) *sweep.Outcome {
	row := func(pi, si int) Row { return sum.Points[pi].Data.Rows[si] }
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	first := p.Specs[0]
	o := &sweep.Outcome{
		Name: p.Name, Description: first.Description, Design: sum.Design, Points: p.Points,
		Columns: []string{"spacing_m", "ir_pct", "ir_ci95_pct", "mean_quality", "p_bl_150_pct", "goodput_mbps",
			"mean_reward", "converge_packets", "handovers", "fec_pct", "replay_reward"},
		Row: func(pi, si int) []string {
			r := row(pi, si)
			return []string{num(r.SpacingM), num(r.IRPct), num(r.IRCI95Pct), num(r.MeanQuality), num(r.PBL150Pct), num(r.GoodputMbps),
				num(r.MeanReward), num(r.ConvergePkts), num(r.Handovers), num(r.FECPct), num(r.ReplayReward)}
		},
		Metric: "interruption ratio (%) / mean quality",
		YLabel: "interruption ratio (%)",
		Y:      func(pi, si int) float64 { return row(pi, si).IRPct },
		Cell:   func(pi, si int) string { r := row(pi, si); return f2(r.IRPct) + " / " + f2(r.MeanQuality) },
		Setup:  fmt.Sprintf("%d seed(s) a point, %g s each.", first.Seeds, first.DurationS),
	}
	if first.Seeds > 1 {
		o.SpreadLabel = fmt.Sprintf("95 %% interval of the mean over %d seeds", first.Seeds)
		o.Spread = func(pi, si int) (float64, float64) {
			r := row(pi, si)
			return r.IRPct - r.IRCI95Pct, r.IRPct + r.IRCI95Pct
		}
	}
	for _, r := range sum.Points[0].Data.Rows {
		label := r.Label
		if r.SpacingM > 0 {
			label += " @ " + f0(r.SpacingM) + " m"
		}
		o.Series = append(o.Series, label)
	}
	return o
}
