package figure

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// maxLinePoints bounds the points a line is drawn with: a figure is about a
// thousand pixels wide, so more points add nothing to see but bytes (a CDF
// over 280 000 samples made a 2 MB SVG).
const maxLinePoints = 1500

// Thin is xys drawn with at most about most points: the range is cut into
// most/2 buckets of consecutive points and each keeps its lowest and highest
// point, in order, so spikes and the ends survive.
func Thin(xys plotter.XYs, most int) plotter.XYs {
	if len(xys) <= most || most < 4 {
		return xys
	}
	buckets := most / 2
	out := make(plotter.XYs, 0, 2*buckets+2)
	for b := range buckets {
		lo, hi := b*len(xys)/buckets, (b+1)*len(xys)/buckets
		minK, maxK := lo, lo
		for k := lo; k < hi; k++ {
			if xys[k].Y < xys[minK].Y {
				minK = k
			}
			if xys[k].Y > xys[maxK].Y {
				maxK = k
			}
		}
		first, second := min(minK, maxK), max(minK, maxK)
		out = append(out, xys[first])
		if second != first {
			out = append(out, xys[second])
		}
	}
	if last := xys[len(xys)-1]; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

// NiceTicks marks an axis at 1, 2 or 5 × 10^k steps (0, 5, 10, 15 rather
// than gonum's default 2.5, 12.5, 22.5), about five to ten of them, labelled
// with no more digits than the step needs.
type NiceTicks struct{}

// niceTickCount is about how many labelled ticks an axis gets.
const niceTickCount = 6

// Ticks implements plot.Ticker.
func (NiceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := niceStep((hi - lo) / niceTickCount)
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', prec, 64)})
	}
	return ticks
}

// niceStep is the 1, 2 or 5 × 10^k nearest above raw.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}
