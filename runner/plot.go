package runner

import (
	"context"
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/pathsel"
)

// The figures, and the PCM journal figure each corresponds to.
const (
	figTCT      = "tct_per_round.png"         // Fig. 10
	figRegret   = "cumulative_regret.png"     // Figs. 11, 18
	figBestProb = "best_path_probability.png" // Figs. 12, 17
	figChosen   = "chosen_path.png"           // Figs. 13, 14, 16
	figCDF      = "tct_cdf.png"
	figPaths    = "path_tct.png" // Figs. 13, 15: the network the strategies met
)

// WriteFigures draws every figure of r into dir and returns their paths; a
// cancelled ctx draws no further figure.
func WriteFigures(ctx context.Context, dir string, r *Result) ([]string, error) {
	labels := make([]string, len(r.Runs))
	for i, runs := range r.Runs {
		labels[i] = runs[0].Label
	}
	seeds := len(r.Runs[0])
	figs := []struct {
		name string
		draw func() (*plot.Plot, error)
	}{
		{figTCT, func() (*plot.Plot, error) {
			smooth := max(1, r.Spec.Rounds/100)
			p := figure.NewPlot(fmt.Sprintf("Task completion time per round (mean of %d seeds and of %d rounds)", seeds, smooth), "round", "TCT (ms)")
			return p, addLines(p, r, smooth, func(run *Run) []float64 { return run.TCTms })
		}},
		{figRegret, func() (*plot.Plot, error) {
			p := figure.NewPlot("Cumulative pseudo-regret (mean over seeds)", "round", "regret ("+objectiveUnit(r)+")")
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
			return p, addLines(p, r, 1, func(run *Run) []float64 { return run.Regret })
		}},
		{figBestProb, func() (*plot.Plot, error) {
			p := figure.NewPlot("Probability of having chosen the best path (cumulative)", "round", "best-path hit rate")
			p.Y.Min, p.Y.Max = 0, 1.02
			return p, addLines(p, r, 1, cumulativeHitRate)
		}},
		{figCDF, func() (*plot.Plot, error) { return cdfPlot(r) }},
	}
	// Figures are independent: draw them in parallel (rasterising is most of
	// an offline experiment's time).
	type job struct {
		name string
		draw func() error
	}
	var jobs []job
	for _, f := range figs {
		jobs = append(jobs, job{f.name, func() error {
			p, err := f.draw()
			if err != nil {
				return err
			}
			return saveWithLegend(filepath.Join(dir, f.name), p, labels)
		}})
	}
	jobs = append(jobs, job{figChosen, func() error { return chosenPathFigure(filepath.Join(dir, figChosen), r) }})
	if len(r.Truth) > 0 {
		jobs = append(jobs, job{figPaths, func() error { return pathFigure(filepath.Join(dir, figPaths), r) }})
	}
	err := workpool.Run(ctx, len(jobs), workpool.Options{}, func(_ context.Context, i int) error {
		if err := jobs[i].draw(); err != nil {
			return fmt.Errorf("%s: %w", jobs[i].name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	files := make([]string, len(jobs))
	for i, j := range jobs {
		files[i] = filepath.Join(dir, j.name)
	}
	return files, nil // each with its .svg twin (figure.SVGName)
}

func objectiveUnit(r *Result) string {
	if r.Spec.Sample == SampleTCTPerByte {
		return "objective, ms/byte"
	}
	if o := r.Spec.Objective.objective(); o.A == 1 || o.Spread == pathsel.Std {
		return "ms"
	}
	return "a·ms + b·ms²"
}

// cumulativeHitRate is the fraction of rounds 1..t on a best path.
func cumulativeHitRate(run *Run) []float64 {
	out := make([]float64, len(run.Hit))
	hits := 0
	for t, h := range run.Hit {
		if h {
			hits++
		}
		out[t] = float64(hits) / float64(t+1)
	}
	return out
}

// maxPoints bounds the points of a line: a 10-inch figure cannot show more,
// and the rasteriser's time grows with every segment.
const maxPoints = 500

// addLines adds one line per strategy: the series f(run) averaged over
// seeds, then over buckets of at least `smooth` rounds (and enough rounds
// to stay within maxPoints). On a log axis, values not > 0 are left out.
func addLines(p *plot.Plot, r *Result, smooth int, f func(run *Run) []float64) error {
	_, logY := p.Y.Scale.(plot.LogScale)
	points := 0
	if logY {
		// A log axis with nothing > 0 on it cannot be drawn (a run with
		// no regret at all): fall back to a linear one.
		defer func() {
			if points == 0 {
				p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
			}
		}()
	}
	rounds := r.Spec.Rounds
	bucket := max(smooth, (rounds+maxPoints-1)/maxPoints)
	for i, runs := range r.Runs {
		mean := make([]float64, rounds)
		for _, run := range runs {
			for t, v := range f(run) {
				mean[t] += v / float64(len(runs))
			}
		}
		xys := make(plotter.XYs, 0, rounds/bucket+1)
		for lo := 0; lo < rounds; lo += bucket {
			hi := min(lo+bucket, rounds)
			var sum float64
			for _, v := range mean[lo:hi] {
				sum += v
			}
			if v := sum / float64(hi-lo); v > 0 || !logY {
				xys = append(xys, plotter.XY{X: float64(hi), Y: v})
			}
		}
		if len(xys) == 0 {
			continue
		}
		points += len(xys)
		if _, err := figure.AddLine(p, i, "", xys); err != nil {
			return err
		}
	}
	return nil
}

// cdfPlot draws the empirical CDF of TCT over every round of every seed.
func cdfPlot(r *Result) (*plot.Plot, error) {
	p := figure.NewPlot("Distribution of task completion time (all rounds and seeds)", "TCT (ms, log scale)", "fraction of tasks ≤ x")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	for i, runs := range r.Runs {
		var all []float64
		for _, run := range runs {
			all = append(all, run.TCTms...)
		}
		slices.Sort(all)
		// 400 quantiles draw the curve as well as every point would.
		const steps = 400
		xys := make(plotter.XYs, 0, steps+1)
		for s := 0; s <= steps; s++ {
			q := float64(s) / steps
			xys = append(xys, plotter.XY{X: stats.Quantile(all, q), Y: q})
		}
		if _, err := figure.AddLine(p, i, "", xys); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// figureSize is the size of the line figures.
var figureSize = figure.Size{W: 10 * vg.Inch, H: 5 * vg.Inch, Legend: 2.3 * vg.Inch}

// saveWithLegend saves p with one legend entry per label, in line order.
func saveWithLegend(name string, p *plot.Plot, labels []string) error {
	entries := make([]figure.Entry, len(labels))
	for i, l := range labels {
		entries[i] = figure.Entry{Label: l, Style: figure.LineStyle(i), Glyph: figure.Glyph(i)}
	}
	return figure.SaveWithLegend(name, p, entries, figureSize)
}

// pathTicks labels the y axis with path names.
func pathTicks(paths []string) plot.ConstantTicks {
	ticks := make(plot.ConstantTicks, len(paths))
	for i, n := range paths {
		ticks[i] = plot.Tick{Value: float64(i), Label: n}
	}
	return ticks
}

// chosenRunGlyphs is the longest stay on one path drawn as separate markers;
// a longer stay is one bar from its first round to its last, which looks the
// same at a figure's resolution and keeps the SVG small (a thousand rounds
// × 14 strategies as markers made 2 MB).
const chosenRunGlyphs = 2

// chosenColumns is how many columns of markers a panel of the chosen-path
// figure holds: a panel is about 270 pt wide and a marker 2.6 pt across,
// so 100 columns set markers side by side: as dense as a reader can tell
// them apart, and the thinned panel looks like one with a marker per round.
const chosenColumns = 100

// addChosenPaths adds path[t] (round t+1) to p at the detail a reader can
// see: the rounds fall into chosenColumns columns, and each path gets a bar
// over every stretch of more than chosenRunGlyphs columns it held whole,
// and a marker (at its first round there) in every other column it was
// chosen in. With at most chosenColumns rounds a column is a round: a
// marker per round of a short stay, a bar per long one. Every path a
// strategy tried stays visible, and the SVG stays the size of the picture
// (a marker per round made it 1 MB).
func addChosenPaths(p *plot.Plot, path []int16, glyph draw.GlyphStyle) error {
	glyph.Radius = vg.Points(1.3)
	segs, pts := chosenMarks(path)
	p.Add(stays{segs: segs, style: draw.LineStyle{Color: glyph.Color, Width: 2 * glyph.Radius}})
	if len(pts) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle = glyph
	p.Add(sc)
	return nil
}

// chosenMarks is what addChosenPaths draws for path: the bars (first and
// last round of a stay) and the markers.
func chosenMarks(path []int16) (bars [][2]plotter.XY, markers plotter.XYs) {
	width := max(1, (len(path)+chosenColumns-1)/chosenColumns)
	cols := (len(path) + width - 1) / width
	for k := range slices.Max(path) + 1 {
		held, first := columnsHeld(path, k, width, cols)
		for c := 0; c < cols; {
			d := c
			for d < cols && held[d] {
				d++
			}
			switch {
			case d-c > chosenRunGlyphs:
				bars = append(bars, [2]plotter.XY{{X: float64(c*width + 1), Y: float64(k)}, {X: float64(min(d*width, len(path))), Y: float64(k)}})
				c = d
				continue
			case first[c] >= 0:
				markers = append(markers, plotter.XY{X: float64(first[c] + 1), Y: float64(k)})
			}
			c++
		}
	}
	return bars, markers
}

// columnsHeld reports, for each column of width rounds, whether every
// round in it chose path k, and the first round that did (-1: none).
func columnsHeld(path []int16, k int16, width, cols int) (held []bool, first []int) {
	held, first = make([]bool, cols), make([]int, cols)
	for c := range cols {
		first[c], held[c] = -1, true
		for t := c * width; t < min((c+1)*width, len(path)); t++ {
			if path[t] != k {
				held[c] = false
			} else if first[c] < 0 {
				first[c] = t
			}
		}
	}
	return held, first
}

// stays draws segments (a strategy's stays on its paths) as one stroked
// path, which an SVG writes as one element rather than one per segment.
type stays struct {
	segs  [][2]plotter.XY
	style draw.LineStyle
}

// Plot implements plot.Plotter.
func (s stays) Plot(c draw.Canvas, plt *plot.Plot) {
	if len(s.segs) == 0 {
		return
	}
	trX, trY := plt.Transforms(&c)
	var path vg.Path
	for _, sg := range s.segs {
		path.Move(vg.Point{X: trX(sg[0].X), Y: trY(sg[0].Y)})
		path.Line(vg.Point{X: trX(sg[1].X), Y: trY(sg[1].Y)})
	}
	c.SetLineStyle(s.style)
	c.Stroke(path)
}

// bestSteps is the best path per round as a line with a corner only where
// the best path changes (a point per round made most of the SVG).
func bestSteps(best []int16) plotter.XYs {
	var xys plotter.XYs
	for t, b := range best {
		if t == 0 || b != best[t-1] {
			if t > 0 {
				xys = append(xys, plotter.XY{X: float64(t), Y: float64(best[t-1])})
			}
			xys = append(xys, plotter.XY{X: float64(t + 1), Y: float64(b)})
		}
	}
	return append(xys, plotter.XY{X: float64(len(best)), Y: float64(best[len(best)-1])})
}

// chosenPathFigure draws, for the first seed, the path each strategy chose
// in each round: one panel per strategy, the best path shaded.
func chosenPathFigure(name string, r *Result) error {
	rounds := r.Spec.Rounds
	if n := r.Spec.Figures.ChosenRounds; n > 0 && n < rounds {
		rounds = n
	}
	cols := 3
	rows := (len(r.Runs) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, runs := range r.Runs {
		run := runs[0]
		p := plot.New()
		p.Title.Text = run.Label
		p.X.Label.Text = "round"
		p.Y.Tick.Marker = pathTicks(r.Paths)
		p.Y.Min, p.Y.Max = -0.5, float64(len(r.Paths))-0.5
		p.X.Min, p.X.Max = 0, float64(rounds)
		if len(r.Best) > 0 {
			l, err := plotter.NewLine(bestSteps(run.Best[:rounds]))
			if err != nil {
				return err
			}
			l.LineStyle = draw.LineStyle{Color: color.NRGBA{0, 160, 0, 70}, Width: vg.Points(6)}
			p.Add(l)
		}
		if err := addChosenPaths(p, run.Path[:rounds], figure.Glyph(i)); err != nil {
			return err
		}
		plots[i/cols][i%cols] = p
	}
	w, h := 12*vg.Inch, vg.Length(rows)*2.2*vg.Inch+0.4*vg.Inch
	title := fmt.Sprintf("Path chosen in each round (seed %d; green band: the best path)", r.Runs[0][0].Seed)
	font := plot.DefaultFont
	font.Size = vg.Points(13)
	return figure.Save(name, w, h, func(dc draw.Canvas) {
		dc.FillText(draw.TextStyle{Color: color.Black, Font: font, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
			vg.Point{X: w / 2, Y: h - 0.25*vg.Inch}, title)
		body := draw.Crop(dc, 0, 0, 0, -0.4*vg.Inch)
		canvases := plot.Align(plots, draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}, body)
		for i := range plots {
			for j, p := range plots[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	})
}

// pathFigure draws each path's true expected sample per round: the network
// as the strategies met it, with the events of the experiment.
func pathFigure(name string, r *Result) error {
	unit := "ms"
	if r.Spec.Sample == SampleTCTPerByte {
		unit = "ms/byte"
	}
	p := figure.NewPlot("Expected task completion time of each path (seed "+fmt.Sprint(r.Spec.Seed)+")", "round", "E[sample] ("+unit+")")
	for k := range r.Paths {
		xys := make(plotter.XYs, len(r.Truth))
		for t, m := range r.Truth {
			xys[t] = plotter.XY{X: float64(t + 1), Y: m[k].Mean}
		}
		if _, err := figure.AddLine(p, k, "", xys); err != nil {
			return err
		}
	}
	return saveWithLegend(name, p, r.Paths)
}
