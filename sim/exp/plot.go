package exp

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
// makes figures slow (the approach of experiment/plot.go).
const maxPoints = 500

// series is one labelled line.
type series struct {
	label string
	xy    plotter.XYs
}

// writeFigures draws the experiment's figures and returns their paths.
func writeFigures(dir string, r *Result) ([]string, error) {
	s := r.Spec
	// Lines compare variants at the largest path count of the sweep.
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
		// Goodput over time: the mean of each bin over the runs still going
		// (a finished run is not a run at zero goodput).
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
		gp = append(gp, series{va.Label, averaged(mean, s.BinMs/1e3)})
		var d, f []float64
		for _, run := range runs {
			for _, x := range run.DelayMs {
				d = append(d, float64(x))
			}
			for _, fl := range run.Flows {
				if fl.FCTS >= 0 {
					f = append(f, fl.FCTS)
				}
			}
		}
		dl = append(dl, series{va.Label, cdf(d)})
		fct = append(fct, series{va.Label, cdf(f)})
	}
	tag := ""
	if maxPaths > 0 {
		tag = fmt.Sprintf(", %d paths", maxPaths)
	}
	figs := []struct {
		name, title, x, y string
		lines             []series
		logX              bool
	}{
		{"goodput.png", "Goodput over time (mean over unfinished runs" + tag + ")", "time (s)", "goodput (Mbit/s)", gp, false},
		{"delivery_delay_cdf.png", "Per-packet delivery delay CDF" + tag, "delivery delay (ms)", "CDF", dl, false},
		{"fct_cdf.png", "Flow completion time CDF" + tag, "FCT (s)", "CDF", fct, false},
	}
	var out []string
	for _, f := range figs {
		p := figure.NewPlot(f.title, f.x, f.y)
		name := filepath.Join(dir, f.name)
		if err := saveLines(name, p, f.lines); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	if len(s.PathCounts) > 1 {
		sums := r.Summaries()
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
			p := figure.NewPlot(m.title, "paths", m.y)
			name := filepath.Join(dir, m.name)
			if err := saveLines(name, p, lines); err != nil {
				return nil, err
			}
			out = append(out, name)
		}
	}
	if s.LEO != nil {
		// Fig. 3.8: the windows of the first run of each variant.
		var lines []series
		for v, va := range s.Variants {
			for _, run := range r.Runs {
				if run.Variant != v || run.LEO == nil {
					continue
				}
				for i, c := range run.LEO.Cwnd {
					y := make([]float64, len(c))
					for j, w := range c {
						y[j] = float64(w)
					}
					xy := averaged(y, s.BinMs/1e3)
					for j := range xy {
						xy[j].X += s.BinMs / 1e3
					}
					lines = append(lines, series{fmt.Sprintf("%s path %d", va.Label, i), xy})
				}
				break
			}
		}
		p := figure.NewPlot("Congestion windows (first seed; BBR: inflight target)", "time (s)", "cwnd (packets)")
		name := filepath.Join(dir, "cwnd.png")
		if err := saveLines(name, p, lines); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	if s.XLabel != "" {
		// Sweep: mean FCT vs the variants' x, one line per group.
		sums := r.Summaries()
		var groups []string
		seen := map[string]bool{}
		for _, va := range s.Variants {
			if !seen[va.Group] {
				seen[va.Group] = true
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
		p := figure.NewPlot("Completion time vs "+s.XLabel, s.XLabel, "mean completion time (s)")
		name := filepath.Join(dir, "fct_vs_x.png")
		if err := saveLines(name, p, lines); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
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
