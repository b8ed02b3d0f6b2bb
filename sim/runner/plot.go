package runner

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/stats"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// maxPoints bounds the points of a line: stroking long jagged lines is what
// makes figures slow (the approach of runner/plot.go).
const maxPoints = 500

// series is one labelled line.
type series struct {
	label string
	xy    plotter.XYs
}

// writeFigures draws the experiment's figures and returns their paths.
func writeFigures(dir string, r *Result) ([]string, error) {
	var out []string
	for _, draw := range []func(string, *Result) ([]string, error){variantFigures, pathCountFigures, cwndFigure, sweepFigure} {
		files, err := draw(dir, r)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// variantFigures draws goodput over time and the delay and FCT CDFs, a
// line per variant at the largest path count of the sweep.
func variantFigures(dir string, r *Result) ([]string, error) {
	s := r.Spec
	maxPaths := 0
	for _, run := range r.Runs {
		maxPaths = max(maxPaths, run.Paths)
	}
	var gp, dl, fct []series
	for v, va := range s.Variants {
		var runs []*RunResult
		for _, run := range r.Runs {
			if run.Variant == v && run.Paths == maxPaths {
				runs = append(runs, run)
			}
		}
		gp = append(gp, series{va.Label, averaged(meanBins(runs), s.BinMs/1e3)})
		dl = append(dl, series{va.Label, delayCDF(runs)})
		var f []float64
		for _, run := range runs {
			for _, fl := range run.Flows {
				if fl.FCTS >= 0 {
					f = append(f, fl.FCTS)
				}
			}
		}
		fct = append(fct, series{va.Label, cdf(f)})
	}
	tag := ""
	if maxPaths > 0 {
		tag = fmt.Sprintf(", %d paths", maxPaths)
	}
	var out []string
	for _, f := range []struct {
		name, title, x, y string
		lines             []series
	}{
		{"goodput.png", "Goodput over time (mean over unfinished runs" + tag + ")", "time (s)", "goodput (Mbit/s)", gp},
		{"delivery_delay_cdf.png", "Per-packet delivery delay CDF" + tag, "delivery delay (ms)", "CDF", dl},
		{"fct_cdf.png", "Flow completion time CDF" + tag, "FCT (s)", "CDF", fct},
	} {
		name := filepath.Join(dir, f.name)
		if err := saveLines(name, figure.NewPlot(f.title, f.x, f.y), f.lines); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

// meanBins is goodput over time: the mean of each bin over the runs still
// going (a finished run is not a run at zero goodput).
func meanBins(runs []*RunResult) []float64 {
	n := 0
	for _, run := range runs {
		n = max(n, len(run.Bins))
	}
	mean := make([]float64, n)
	count := make([]int, n)
	for _, run := range runs {
		for i, x := range run.Bins {
			mean[i] += x
			count[i]++
		}
	}
	for i := range mean {
		mean[i] /= float64(max(count[i], 1))
	}
	return mean
}

// delayCDF is the CDF of the runs' per-chunk delivery delays: exact when
// every run kept them, else ≤ maxPoints quantiles of their merged sketch.
func delayCDF(runs []*RunResult) plotter.XYs {
	if sketched(runs) {
		qs := make([]float64, maxPoints+1)
		for k := range qs {
			qs[k] = float64(k) / maxPoints
		}
		x, _, err := delayQuantiles(runs, qs...)
		if err != nil {
			return nil // the summary reports it
		}
		xy := make(plotter.XYs, len(qs))
		for k, q := range qs {
			xy[k] = plotter.XY{X: x[k], Y: q}
		}
		return xy
	}
	var d []float64
	for _, run := range runs {
		for _, x := range run.DelayMs {
			d = append(d, float64(x))
		}
	}
	return cdf(d)
}

// pathCountFigures draws p90 delay and goodput against the number of
// paths when the spec sweeps it.
func pathCountFigures(dir string, r *Result) ([]string, error) {
	s := r.Spec
	if len(s.PathCounts) <= 1 {
		return nil, nil
	}
	sums := r.Summaries()
	var out []string
	for _, m := range []struct {
		name, title, y string
		get            func(Summary) float64
	}{
		{"p90_delay_vs_paths.png", "90th percentile delivery delay vs number of paths", "p90 delivery delay (ms)", func(x Summary) float64 { return x.DelayP90Ms }},
		{"goodput_vs_paths.png", "Goodput vs number of paths", "goodput (Mbit/s)", func(x Summary) float64 { return x.GoodputMbps }},
	} {
		var lines []series
		for _, va := range s.Variants {
			var xy plotter.XYs
			for _, x := range sums {
				if x.Label == va.Label {
					xy = append(xy, plotter.XY{X: float64(x.Paths), Y: m.get(x)})
				}
			}
			lines = append(lines, series{va.Label, xy})
		}
		name := filepath.Join(dir, m.name)
		if err := saveLines(name, figure.NewPlot(m.title, "paths", m.y), lines); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

// cwndFigure is a LEO spec's Fig. 3.8: the windows of the first run of
// each variant.
func cwndFigure(dir string, r *Result) ([]string, error) {
	s := r.Spec
	if s.LEO == nil {
		return nil, nil
	}
	var lines []series
	for v, va := range s.Variants {
		i := slices.IndexFunc(r.Runs, func(run *RunResult) bool { return run.Variant == v && run.LEO != nil })
		if i < 0 {
			continue
		}
		for p, c := range r.Runs[i].LEO.Cwnd {
			y := make([]float64, len(c))
			for j, w := range c {
				y[j] = float64(w)
			}
			xy := averaged(y, s.BinMs/1e3)
			for j := range xy {
				xy[j].X += s.BinMs / 1e3
			}
			lines = append(lines, series{fmt.Sprintf("%s path %d", va.Label, p), xy})
		}
	}
	name := filepath.Join(dir, "cwnd.png")
	p := figure.NewPlot("Congestion windows (first seed; BBR: inflight target)", "time (s)", "cwnd (packets)")
	if err := saveLines(name, p, lines); err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// sweepFigure draws mean FCT against the variants' x (x_label), one line
// per group.
func sweepFigure(dir string, r *Result) ([]string, error) {
	s := r.Spec
	if s.XLabel == "" {
		return nil, nil
	}
	sums := r.Summaries()
	var groups []string
	for _, va := range s.Variants {
		if !slices.Contains(groups, va.Group) {
			groups = append(groups, va.Group)
		}
	}
	var lines []series
	for _, g := range groups {
		var xy plotter.XYs
		for i, va := range s.Variants {
			if va.Group == g && sums[i].FCTMeanS > 0 {
				xy = append(xy, plotter.XY{X: va.X, Y: sums[i].FCTMeanS})
			}
		}
		lines = append(lines, series{g, xy})
	}
	name := filepath.Join(dir, "fct_vs_x.png")
	if err := saveLines(name, figure.NewPlot("Completion time vs "+s.XLabel, s.XLabel, "mean completion time (s)"), lines); err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// averaged turns per-bin values into ≤ maxPoints points, averaging buckets.
func averaged(y []float64, dx float64) plotter.XYs {
	b := max(1, (len(y)+maxPoints-1)/maxPoints)
	var xy plotter.XYs
	for i := 0; i < len(y); i += b {
		j := min(len(y), i+b)
		m := 0.0
		for _, v := range y[i:j] {
			m += v
		}
		xy = append(xy, plotter.XY{X: (float64(i) + float64(j-i)/2) * dx, Y: m / float64(j-i)})
	}
	return xy
}

// cdf returns ≤ maxPoints points of the empirical CDF of x.
func cdf(x []float64) plotter.XYs {
	if len(x) == 0 {
		return nil
	}
	slices.Sort(x)
	n := min(len(x), maxPoints)
	xy := make(plotter.XYs, 0, n+1)
	for k := 0; k <= n; k++ {
		q := float64(k) / float64(n)
		xy = append(xy, plotter.XY{X: stats.Quantile(x, q), Y: q})
	}
	return xy
}

// saveLines draws the lines with the legend in a column to the right.
func saveLines(name string, p *plot.Plot, lines []series) error {
	var entries []figure.Entry
	for i, s := range lines {
		if len(s.xy) == 0 {
			continue
		}
		e, err := figure.AddLine(p, i, s.label, s.xy)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, s.label, err)
		}
		entries = append(entries, e)
	}
	return figure.SaveWithLegend(name, p, entries, figure.Size{W: 9 * vg.Inch, H: 4.5 * vg.Inch, Legend: 1.8 * vg.Inch})
}
