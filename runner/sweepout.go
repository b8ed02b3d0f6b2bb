package runner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
)

// SweepSummary is summary.json of a swept experiment: every point with its
// assignments and the summary of each strategy there (docs/results.md).
type SweepSummary = sweep.Summary[PointSummary]

// PointSummary is what a sweep's point holds: each strategy's summary.
type PointSummary struct {
	Strategies []StrategySummary `json:"strategies"`
}

// WritePlan writes a plan's results into dir: for an experiment without a
// sweep exactly what WriteAll writes; for a sweep, summary.json, sweep.csv,
// a figure and report.md over every point (sweep.WriteOutcome), and each
// point's own summary in points/ID/summary.json.
func WritePlan(ctx context.Context, dir string, p *Plan, res []*Result) ([]string, error) {
	if !p.Swept {
		return WriteAll(ctx, dir, res[0], Summarize(res[0]))
	}
	sum, err := SummarizePlan(p, res)
	if err != nil {
		return nil, err
	}
	return sweep.WriteSweep(dir, p.Points, func(i int) results.Summary { return Summarize(res[i]) }, sum, SweepOutcome(p, sum))
}

// SummarizePlan summarizes a swept plan point by point.
func SummarizePlan(p *Plan, res []*Result) (*SweepSummary, error) {
	if !p.Swept || len(res) != len(p.Points) {
		return nil, fmt.Errorf("%s: not a sweep's results", p.Name)
	}
	first := p.Specs[0]
	return sweep.NewSummary(results.NewHeader(p.Name, first.Mode, results.Seeds(first.Seed, first.Seeds)), nil, p.Design, p.Points,
		func(i int) PointSummary { return PointSummary{Summarize(res[i]).Strategies} }), nil
}

// SweepOutcome is what sweep.WriteOutcome draws and tabulates of a sweep: the
// ratio to the oracle when the experiment has one (comparable across points
// whose paths differ), else the mean TCT.
func SweepOutcome(p *Plan, sum *SweepSummary) *sweep.Outcome {
	st := func(pi, si int) StrategySummary { return sum.Points[pi].Data.Strategies[si] }
	o := &sweep.Outcome{
		Name: p.Name, Description: p.Specs[0].Description, Design: sum.Design, Points: p.Points,
		Columns: []string{"mean_tct_ms", "mean_tct_ci95_ms", "p95_tct_ms", "ratio_to_oracle", "cumulative_regret", "switches_per_100_rounds"},
		Row: func(pi, si int) []string {
			s := st(pi, si)
			ratio := ""
			if s.RatioToOracle != nil {
				ratio = num(*s.RatioToOracle)
			}
			return []string{num(s.MeanTCTms), num(s.MeanTCTCI95ms), num(s.P95TCTms), ratio, num(s.CumRegret), num(s.SwitchesPer100)}
		},
		Metric: "mean TCT (ms)",
		Y:      func(pi, si int) float64 { return st(pi, si).MeanTCTms },
		Setup: fmt.Sprintf("Each point runs every strategy on seeds %d…%d.",
			p.Specs[0].Seed, p.Specs[0].Seed+uint64(p.Specs[0].Seeds)-1),
	}
	for _, s := range sum.Points[0].Data.Strategies {
		o.Series = append(o.Series, s.Label)
	}
	if sum.Points[0].Data.Strategies[0].RatioToOracle != nil {
		o.Metric = "mean TCT / oracle's"
		o.Y = func(pi, si int) float64 { return *st(pi, si).RatioToOracle }
	}
	if n := p.Specs[0].Seeds; n > 1 {
		o.SpreadLabel = fmt.Sprintf("95 %% interval of the mean over %d seeds", n)
		o.Spread = func(pi, si int) (float64, float64) {
			s := st(pi, si)
			return s.MeanTCTms - s.MeanTCTCI95ms, s.MeanTCTms + s.MeanTCTCI95ms
		}
		if sum.Points[0].Data.Strategies[0].RatioToOracle != nil {
			o.SpreadLabel += ", over the oracle's mean"
			o.Spread = func(pi, si int) (float64, float64) { return ratioInterval(st(pi, si)) }
		}
	}
	return o
}

// ratioInterval is a strategy's 95 % interval of the mean TCT divided by
// the oracle's mean (its own spread left out: the oracle is the yardstick).
func ratioInterval(s StrategySummary) (lo, hi float64) {
	r := *s.RatioToOracle
	if s.MeanTCTms == 0 {
		return r, r
	}
	rel := s.MeanTCTCI95ms / s.MeanTCTms
	return r * (1 - rel), r * (1 + rel)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
