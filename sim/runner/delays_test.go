package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// A run past exactChunks sketches its delays: the summary's quantiles stay
// within SketchRelError of the exact ones (and say so), the reordering mean
// is the same, the per-chunk CSV is left out, and exact_chunk_delays keeps
// it exact.
func TestDelaySketchBound(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	f := write(t, dir, "s.yaml", "name: s\nscenario: two.yaml\napp: {size_mb: 3}\nseeds: 2\nvariants: [{}]\n")
	runAll := func() *Result {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), s, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	exact := runAll()
	defer func(n int) { exactChunks = n }(exactChunks)
	exactChunks = 200
	sk := runAll()
	if sk.Runs[0].DelaySketch == nil || len(sk.Runs[0].DelayMs) != 0 || sk.Runs[0].Chunks != exact.Runs[0].Chunks {
		t.Fatalf("run past exactChunks: sketch %d B, %d exact delays, %d chunks", len(sk.Runs[0].DelaySketch), len(sk.Runs[0].DelayMs), sk.Runs[0].Chunks)
	}
	e, s := exact.Summaries()[0], sk.Summaries()[0]
	if e.DelayQuantileRelErr != 0 || s.DelayQuantileRelErr != SketchRelError {
		t.Errorf("rel error: exact %v, sketched %v", e.DelayQuantileRelErr, s.DelayQuantileRelErr)
	}
	for _, c := range []struct {
		name    string
		ex, got float64
	}{{"p50", e.DelayP50Ms, s.DelayP50Ms}, {"p90", e.DelayP90Ms, s.DelayP90Ms}, {"p99", e.DelayP99Ms, s.DelayP99Ms}} {
		// The bound plus a percent for type-7 interpolation between
		// neighbouring samples.
		if math.Abs(c.got-c.ex) > (SketchRelError+0.01)*c.ex {
			t.Errorf("%s: sketched %.3f ms, exact %.3f ms", c.name, c.got, c.ex)
		}
	}
	if math.Abs(s.ReorderMeanMs-e.ReorderMeanMs) > 1e-9*math.Max(1, e.ReorderMeanMs) {
		t.Errorf("reordering mean: %v sketched, %v exact", s.ReorderMeanMs, e.ReorderMeanMs)
	}
	out := filepath.Join(dir, "out")
	if _, err := WriteAll(out, sk); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", runName(sk.Runs[0])+"_delay.csv")); !os.IsNotExist(err) {
		t.Errorf("a sketched run wrote its per-chunk CSV (%v)", err)
	}
	write(t, dir, "s.yaml", "name: s\nscenario: two.yaml\napp: {size_mb: 3}\nseeds: 2\nexact_chunk_delays: true\nvariants: [{}]\n")
	if kept := runAll(); kept.Runs[0].DelaySketch != nil || kept.Summaries()[0].DelayP90Ms != e.DelayP90Ms {
		t.Errorf("exact_chunk_delays: sketch %d B, p90 %v (exact %v)", len(kept.Runs[0].DelaySketch), kept.Summaries()[0].DelayP90Ms, e.DelayP90Ms)
	}
}
