package experiment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
)

// SweepSummary is summary.json of a swept experiment: every point with its
// assignments and the summary of each strategy there (docs/results.md).
type SweepSummary struct {
	results.Header
	Design string         `json:"design"`
	Params []string       `json:"params"` // the swept fields
	Points []PointSummary `json:"points"`
}

// PointSummary is one point of a sweep.
type PointSummary struct {
	ID         string            `json:"id"`
	Assigns    []sweep.Assign    `json:"assigns"`
	Strategies []StrategySummary `json:"strategies"`
}

// WritePlan writes a plan's results into dir: for an experiment without a
// sweep exactly what WriteAll writes; for a sweep, summary.json, sweep.csv,
// a figure and report.md over every point, and each point's own summary in
// points/ID/summary.json.
func WritePlan(dir string, p *Plan, res []*Result) ([]string, error) {
	if !p.Swept {
		return WriteAll(dir, res[0], Summarize(res[0]))
	}
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	sum, err := SummarizePlan(p, res)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		pd, err := results.Create(filepath.Join(dir, "points", p.Points[i].ID))
		if err != nil {
			return nil, err
		}
		if err := pd.WriteSummary(Summarize(r)); err != nil {
			return nil, err
		}
	}
	if err := d.WriteSummary(sum); err != nil {
		return nil, err
	}
	header := append([]string{"point"}, sum.Params...)
	header = append(header, "strategy", "mean_tct_ms", "mean_tct_ci95_ms", "p95_tct_ms", "ratio_to_oracle", "cumulative_regret", "switches_per_100_rounds")
	c, err := d.CreateCSV("sweep.csv", header...)
	if err != nil {
		return nil, err
	}
	for _, pt := range sum.Points {
		for _, st := range pt.Strategies {
			row := []string{pt.ID}
			for _, a := range pt.Assigns {
				row = append(row, a.Value)
			}
			row = append(row, st.Label, num(st.MeanTCTms), num(st.MeanTCTCI95ms), num(st.P95TCTms),
				optNum(st.RatioToOracle), num(st.CumRegret), num(st.SwitchesPer100))
			if err := c.Row(row...); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	if err := c.Close(); err != nil {
		return nil, err
	}
	fig := filepath.Join(dir, "sweep.png")
	if err := sweepFigure(fig, sum); err != nil {
		return nil, fmt.Errorf("write figures: %w", err)
	}
	d.AddFigure(fig)
	if err := d.WriteReport(sweepReport(p, sum)); err != nil {
		return nil, err
	}
	return d.Files(), nil
}

// SummarizePlan summarizes a swept plan point by point.
func SummarizePlan(p *Plan, res []*Result) (*SweepSummary, error) {
	if !p.Swept || len(res) != len(p.Points) {
		return nil, fmt.Errorf("%s: not a sweep's results", p.Name)
	}
	first := p.Specs[0]
	sum := &SweepSummary{
		Header: results.NewHeader(p.Name, first.Mode, results.Seeds(first.Seed, first.Seeds)),
		Design: p.Design,
	}
	for _, a := range p.Points[0].Assigns {
		sum.Params = append(sum.Params, a.Key)
	}
	for i, r := range res {
		sum.Points = append(sum.Points, PointSummary{ID: p.Points[i].ID, Assigns: p.Points[i].Assigns, Strategies: Summarize(r).Strategies})
	}
	return sum, nil
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

// sweepX is the figure's x axis: the swept field's value when one numeric
// field is swept, else the point's number.
func sweepX(sum *SweepSummary) (label string, xs []float64) {
	if len(sum.Params) == 1 {
		for _, pt := range sum.Points {
			v, err := strconv.ParseFloat(pt.Assigns[0].Value, 64)
			if err != nil {
				xs = nil
				break
			}
			xs = append(xs, v)
		}
		if xs != nil {
			return sum.Params[0], xs
		}
	}
	for i := range sum.Points {
		xs = append(xs, float64(i))
	}
	return "point (see report.md)", xs
}

// sweepMetric is what the figure shows: the ratio to the oracle when the
// experiment has one (comparable across points whose paths differ), else
// the mean TCT.
func sweepMetric(sum *SweepSummary) (string, func(StrategySummary) float64) {
	if len(sum.Points) > 0 && len(sum.Points[0].Strategies) > 0 && sum.Points[0].Strategies[0].RatioToOracle != nil {
		return "mean TCT / oracle's", func(s StrategySummary) float64 { return *s.RatioToOracle }
	}
	return "mean TCT (ms)", func(s StrategySummary) float64 { return s.MeanTCTms }
}

func sweepFigure(name string, sum *SweepSummary) error {
	xl, xs := sweepX(sum)
	yl, y := sweepMetric(sum)
	p := figure.NewPlot(sum.Experiment+": sweep", xl, yl)
	var entries []figure.Entry
	for si, st := range sum.Points[0].Strategies {
		xys := make(plotter.XYs, len(sum.Points))
		for i, pt := range sum.Points {
			xys[i].X, xys[i].Y = xs[i], y(pt.Strategies[si])
		}
		e, err := figure.AddLine(p, si, st.Label, xys)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	return figure.SaveWithLegend(name, p, entries, figure.Size{W: 9 * vg.Inch, H: 5 * vg.Inch, Legend: 2 * vg.Inch})
}

func sweepReport(p *Plan, sum *SweepSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment %s: a %s sweep over %d points\n\n", p.Name, sum.Design, len(sum.Points))
	if d := strings.TrimSpace(p.Specs[0].Description); d != "" {
		fmt.Fprintf(&b, "%s\n\n", d)
	}
	fmt.Fprintf(&b, "Swept: %s. Each point runs every strategy on seeds %d…%d; points/ID/summary.json holds each point's full summary.\n\n",
		strings.Join(sum.Params, ", "), p.Specs[0].Seed, p.Specs[0].Seed+uint64(p.Specs[0].Seeds)-1)
	b.WriteString(results.FigureMarkdown("sweep.png", "each strategy across the points"))
	b.WriteString("\n")
	b.WriteString(SweepTable(sum).Markdown())
	return b.String()
}

// SweepTable is the report's table: one row per point, a column per strategy.
func SweepTable(sum *SweepSummary) results.Table {
	yl, y := sweepMetric(sum)
	t := results.Table{Caption: "**" + yl + "** per point and strategy", Header: append([]string{"point"}, sum.Params...)}
	for _, st := range sum.Points[0].Strategies {
		t.Header = append(t.Header, st.Label)
	}
	for _, pt := range sum.Points {
		row := []string{pt.ID}
		for _, a := range pt.Assigns {
			row = append(row, a.Value)
		}
		for _, st := range pt.Strategies {
			row = append(row, strconv.FormatFloat(y(st), 'f', 3, 64))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
