// Package stats holds hetquic's one definition of every summary statistic
// its experiments report: mean, sample variance and standard deviation,
// quantiles, Student-t confidence intervals, and the duration → milliseconds
// conversion. Every runner, report and measurement uses these, so two
// tables never disagree because they computed "p95" or "±95 %" differently.
//
// Conventions, chosen once:
//   - Quantile is Hyndman & Fan's type 7 (linear interpolation between the
//     closest ranks, h = (n−1)·q): the default of R, NumPy and Julia, and
//     what hetquic's offline and simulator summaries already used.
//   - Variance is the unbiased sample variance (divisor n−1).
//   - CI95 is the half-width of Student's t interval for the mean,
//     t(0.975, n−1)·s/√n: with 20 seeds t = 2.093, 7 % wider than the normal
//     approximation's 1.96, which is only right for large n.
//   - Empty input (and too-short input for a spread) gives NaN, never a
//     panic; callers that write JSON must decide what NaN means for them.
//
// The package is pure: no I/O, no clock, no global randomness.
package stats

import (
	"math"
	"slices"
	"time"
)

// Mean is the arithmetic mean of xs; NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// MeanVar is the mean and the unbiased sample variance of xs. The variance
// of one value is 0 (no spread observed); both are NaN for empty xs.
func MeanVar(xs []float64) (mean, variance float64) {
	mean = Mean(xs)
	if len(xs) < 2 {
		if len(xs) == 1 {
			return mean, 0
		}
		return mean, math.NaN()
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// MeanStd is the mean and the sample standard deviation of xs (see MeanVar).
func MeanStd(xs []float64) (mean, std float64) {
	m, v := MeanVar(xs)
	return m, math.Sqrt(v)
}

// CI95 is the half-width of the two-sided 95 % Student-t confidence
// interval for the mean of xs, t(0.975, n−1)·s/√n. It is NaN for fewer than
// two values: one value says nothing about the spread.
func CI95(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return math.NaN()
	}
	_, v := MeanVar(xs)
	return TQuantile(0.975, n-1) * math.Sqrt(v/float64(n))
}

// Quantile is the type-7 quantile q ∈ [0, 1] of sorted (ascending) xs:
// with h = (n−1)·q, xs[⌊h⌋] + (h−⌊h⌋)·(xs[⌊h⌋+1] − xs[⌊h⌋]). NaN when xs is
// empty or q is outside [0, 1] or NaN. The caller sorts (once, for several
// quantiles); Quantiles does it for unsorted input.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := q * float64(n-1)
	i := int(h)
	if i+1 >= n {
		return sorted[n-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// Quantiles returns the type-7 quantiles qs of unsorted xs, which it leaves
// untouched (it sorts a copy).
func Quantiles(xs []float64, qs ...float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	out := make([]float64, len(qs))
	for i, q := range qs {
		out[i] = Quantile(s, q)
	}
	return out
}

// Median is the type-7 median of unsorted xs (the mean of the two middle
// values for even n); NaN when empty.
func Median(xs []float64) float64 { return Quantiles(xs, 0.5)[0] }

// Ms is d in milliseconds, unrounded: the one conversion every table and
// JSON field uses (rounding is the printer's job, e.g. %.2f).
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// DurationMs is Ms's inverse: v milliseconds as a Duration, rounded to the
// nearest nanosecond (so 0.1 ms is exactly 100 µs, not 99.999 µs).
func DurationMs(v float64) time.Duration {
	return time.Duration(math.Round(v * float64(time.Millisecond)))
}

// FloatsMs converts durations to milliseconds.
func FloatsMs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = Ms(d)
	}
	return out
}
