package sweep

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
)

// Outcome is what a mode hands WriteOutcome about a finished sweep: the
// points, the series compared at each (strategies or variants), and how to
// render a (point, series) cell.
type Outcome struct {
	Name, Description string
	Design            string
	Points            []Point
	Series            []string
	// Columns name sweep.csv's columns after point, the parameters and
	// series; Row gives them for point p and series s.
	Columns []string
	Row     func(p, s int) []string
	// Metric is what the table shows (Cell; Y with three decimals when
	// nil) and YLabel what the figure draws (Y; Metric when empty).
	Metric string
	YLabel string
	Y      func(p, s int) float64
	Cell   func(p, s int) string
	// Spread, when set, is the interval around Y over the point's seeds
	// (lo ≤ Y ≤ hi) that the figure draws as error bars, so that a reader
	// sees which differences between series exceed the seed-to-seed noise;
	// SpreadLabel says what the interval is ("95 % interval of the mean over
	// 5 seeds").
	Spread      func(p, s int) (lo, hi float64)
	SpreadLabel string
	// Setup is a line of the report on what each point ran.
	Setup string
}

// Params are the swept fields, in the points' (sorted) order.
func (o *Outcome) Params() []string {
	var ps []string
	for _, a := range o.Points[0].Assigns {
		ps = append(ps, a.Key)
	}
	return ps
}

// Table is the report's table: a row per point, a column per series.
func (o *Outcome) Table() results.Table {
	t := results.Table{Caption: "**" + o.Metric + "** per point", Header: append([]string{"point"}, o.Params()...)}
	t.Header = append(t.Header, o.Series...)
	for p, pt := range o.Points {
		row := []string{pt.ID}
		for _, a := range pt.Assigns {
			row = append(row, a.Value)
		}
		for s := range o.Series {
			if o.Cell != nil {
				row = append(row, o.Cell(p, s))
			} else {
				row = append(row, strconv.FormatFloat(o.Y(p, s), 'f', 3, 64))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// WriteOutcome writes sweep.csv, sweep.png/.svg and report.md into d (the
// mode writes summary.json and points/ID/ itself).
func WriteOutcome(d *results.Dir, o *Outcome) error {
	params := o.Params()
	header := append(append([]string{"point"}, params...), "series")
	c, err := d.CreateCSV("sweep.csv", append(header, o.Columns...)...)
	if err != nil {
		return err
	}
	for p, pt := range o.Points {
		for s, label := range o.Series {
			row := []string{pt.ID}
			for _, a := range pt.Assigns {
				row = append(row, a.Value)
			}
			row = append(append(row, label), o.Row(p, s)...)
			if err := c.Row(row...); err != nil {
				c.Close()
				return err
			}
		}
	}
	if err := c.Close(); err != nil {
		return err
	}
	fig := filepath.Join(d.Root(), "sweep.png")
	if err := o.figure(fig); err != nil {
		return fmt.Errorf("write figures: %w", err)
	}
	d.AddFigure(fig)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: a %s sweep over %d points\n\n", o.Name, o.Design, len(o.Points))
	if s := strings.TrimSpace(o.Description); s != "" {
		fmt.Fprintf(&b, "%s\n\n", s)
	}
	fmt.Fprintf(&b, "Swept: %s. %s points/ID/summary.json holds each point's full summary.\n\n", strings.Join(params, ", "), o.Setup)
	b.WriteString(results.FigureMarkdown("sweep.png", "each series across the points"))
	b.WriteString("\n")
	b.WriteString(o.Table().Markdown())
	return d.WriteReport(b.String())
}

// figure draws each series across the points: x is the swept field's value
// when one numeric field is swept, else the point's number.
func (o *Outcome) figure(name string) error {
	xl, xs := "point (see report.md)", make([]float64, len(o.Points))
	for i := range xs {
		xs[i] = float64(i)
	}
	if params := o.Params(); len(params) == 1 {
		vals := make([]float64, len(o.Points))
		numeric := true
		for i, pt := range o.Points {
			v, err := strconv.ParseFloat(pt.Assigns[0].Value, 64)
			vals[i], numeric = v, numeric && err == nil
		}
		if numeric {
			xl, xs = params[0], vals
		}
	}
	yl := o.YLabel
	if yl == "" {
		yl = o.Metric
	}
	title := o.Name + ": sweep"
	if o.Spread != nil {
		title += " (bars: " + o.SpreadLabel + ")"
	}
	p := figure.NewPlot(title, xl, yl)
	var entries []figure.Entry
	for s, label := range o.Series {
		xys := make(plotter.XYs, len(o.Points))
		for i := range o.Points {
			xys[i].X, xys[i].Y = xs[i], o.Y(i, s)
		}
		e, err := figure.AddLine(p, s, label, xys)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		if o.Spread != nil {
			if err := o.addSpread(p, s, xys, dodge(xs, s, len(o.Series))); err != nil {
				return err
			}
		}
	}
	return figure.SaveWithLegend(name, p, entries, figure.Size{W: 9 * vg.Inch, H: 5 * vg.Inch, Legend: 2 * vg.Inch})
}

// spreadBars are a series' error bars: the interval of each point.
type spreadBars struct {
	plotter.XYs
	lo, hi []float64
}

// YError implements plotter.YErrorer: the distances below and above Y.
func (b spreadBars) YError(i int) (float64, float64) {
	return b.XYs[i].Y - b.lo[i], b.hi[i] - b.XYs[i].Y
}

// dodgeShare is how far apart, as a share of the x range, the error bars of
// neighbouring series stand at one point: enough to tell overlapping bars
// apart, little enough that each stays by its marker.
const dodgeShare = 0.006

// dodge is the x offset of series s of n's error bars.
func dodge(xs []float64, s, n int) float64 {
	span := slices.Max(xs) - slices.Min(xs)
	if span == 0 {
		span = 1
	}
	return (float64(s) - float64(n-1)/2) * dodgeShare * span
}

// addSpread draws series s's interval at each point as an error bar in the
// series' colour, dx to the side of the point.
func (o *Outcome) addSpread(p *plot.Plot, s int, xys plotter.XYs, dx float64) error {
	b := spreadBars{XYs: make(plotter.XYs, len(xys)), lo: make([]float64, len(xys)), hi: make([]float64, len(xys))}
	for i := range xys {
		b.XYs[i] = plotter.XY{X: xys[i].X + dx, Y: xys[i].Y}
		b.lo[i], b.hi[i] = o.Spread(i, s)
		if !(b.lo[i] <= xys[i].Y && xys[i].Y <= b.hi[i]) {
			return fmt.Errorf("%s at point %s: interval [%g, %g] does not hold %g", o.Series[s], o.Points[i].ID, b.lo[i], b.hi[i], xys[i].Y)
		}
	}
	eb, err := plotter.NewYErrorBars(b)
	if err != nil {
		return err
	}
	eb.LineStyle = figure.LineStyle(s)
	eb.LineStyle.Dashes = nil
	eb.CapWidth = vg.Points(5)
	p.Add(eb)
	return nil
}
