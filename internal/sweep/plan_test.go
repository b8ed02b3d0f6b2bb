package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/workpool"
)

// A plan runs its runs, collects a point's in order (a missing one is an
// error naming it), and writes and reads shards; a mode without SetSeeds
// writes seeds 0 so that a merge does not try to override them.
func TestPlan(t *testing.T) {
	for _, overridable := range []bool{true, false} {
		l := Loader[int]{Runs: func(n int) int { return n }, Seeds: func(int) int { return 1 }}
		if overridable {
			l.SetSeeds = func(int, int) {}
		}
		p := &Plan[int, int]{Name: "p", Set: Single(3, l)}
		if p.PointsNote() != "" {
			t.Errorf("unswept note %q", p.PointsNote())
		}
		runs, err := p.RunShard(context.Background(), All, workpool.Options{}, nil, func(_ context.Context, _, r int) (*int, error) { return &r, nil })
		if err != nil {
			t.Fatal(err)
		}
		pt, err := p.Point(runs, 0)
		if err != nil || len(pt) != 3 || *pt[2] != 2 {
			t.Fatalf("point 0: %v %v", pt, err)
		}
		dir := t.TempDir()
		if err := p.WritePartial(dir, "spec.yaml", All, runs); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(dir)
		if err != nil || h.Spec != "spec.yaml" || h.Experiment != "p" || h.TotalRuns != 3 || (h.Seeds == 1) != overridable {
			t.Fatalf("header %+v, %v", h, err)
		}
		back, err := p.ReadPartials([]string{dir})
		if err != nil || len(back) != 3 || *back[1] != 1 {
			t.Fatalf("read back %v, %v", back, err)
		}
		delete(runs, 1)
		if _, err := p.Point(runs, 0); err == nil || !strings.Contains(err.Error(), "p: run 1 of 3 is missing") {
			t.Errorf("missing run: %v", err)
		}
	}
}
