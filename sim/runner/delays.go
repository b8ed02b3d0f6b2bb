package runner

import (
	"fmt"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
)

// Per-chunk delays are kept exactly while a run has delivered at most
// exactChunks chunks (1.5 GB of 1448-byte payloads: every shipped
// experiment and every claim's run), so quantiles, the delay CDF and
// runs/…_delay.csv are exact there. A longer transfer folds them into a
// DDSketch (Masson, Rim & Lee, VLDB 2019) whose quantiles are within
// SketchRelError of the exact ones, relative, in memory that does not grow
// with the transfer (about 1 kB per decade of delay); its per-chunk CSV is
// not written unless the spec sets exact_chunk_delays, which keeps 8 bytes a
// chunk again.
var exactChunks = 1 << 20 // a variable only so that a test can lower it

const (
	// SketchRelError bounds a sketched delay quantile's relative error:
	// the value returned for quantile q is within 0.5 % of an exact
	// quantile at rank q (type-7 interpolation may differ by as much as
	// the gap between neighbouring samples).
	SketchRelError = 0.005
)

// delayRecorder collects a run's per-chunk delays into its RunResult.
type delayRecorder struct {
	keepAll bool // exact_chunk_delays
	sketch  *ddsketch.DDSketch
}

// add records one chunk's delivery and reordering delay (ms).
func (d *delayRecorder) add(r *RunResult, delayMs, reorderMs float32) {
	r.Chunks++
	r.ReorderSumMs += float64(reorderMs)
	if d.sketch == nil && (d.keepAll || len(r.DelayMs) < exactChunks) {
		r.DelayMs = append(r.DelayMs, delayMs)
		r.ReorderMs = append(r.ReorderMs, reorderMs)
		return
	}
	if d.sketch == nil {
		d.sketch = newSketch()
		for _, x := range r.DelayMs {
			addSketch(d.sketch, x)
		}
		r.DelayMs, r.ReorderMs = nil, nil
	}
	addSketch(d.sketch, delayMs)
}

// finish stores the sketch, when there is one, in the result (encoded: a
// RunResult travels between shards by gob).
func (d *delayRecorder) finish(r *RunResult) {
	if d.sketch != nil {
		d.sketch.Encode(&r.DelaySketch, false)
	}
}

func newSketch() *ddsketch.DDSketch {
	s, err := ddsketch.NewDefaultDDSketch(SketchRelError)
	if err != nil {
		panic(err) // only for an accuracy outside (0, 1)
	}
	return s
}

func addSketch(s *ddsketch.DDSketch, ms float32) {
	_ = s.Add(max(0, float64(ms))) // Add fails only on NaN and ±Inf, which a delay is not
}

// delayQuantiles are the delivery-delay quantiles qs over runs: exact
// (type 7) when every run kept its delays, else from their merged sketches
// (relErr = SketchRelError).
func delayQuantiles(runs []*RunResult, qs ...float64) (out []float64, relErr float64, err error) {
	if !sketched(runs) {
		var all []float32
		for _, r := range runs {
			all = append(all, r.DelayMs...)
		}
		return quantiles32(all, qs...), 0, nil
	}
	s := newSketch()
	for _, r := range runs {
		if r.DelaySketch != nil {
			if err := s.DecodeAndMergeWith(r.DelaySketch); err != nil {
				return nil, 0, fmt.Errorf("%s seed %d: delay sketch: %w", r.Label, r.Seed, err)
			}
		}
		for _, x := range r.DelayMs {
			addSketch(s, x)
		}
	}
	out = make([]float64, len(qs))
	for i, q := range qs {
		if out[i], err = s.GetValueAtQuantile(q); err != nil {
			out[i] = 0 // an empty sketch: no chunk delivered
		}
	}
	return out, SketchRelError, nil
}

// sketched reports whether a run sketched its delays.
func sketched(runs []*RunResult) bool {
	return slices.ContainsFunc(runs, func(r *RunResult) bool { return r.DelaySketch != nil })
}
