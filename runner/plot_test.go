package runner

import (
	"testing"

	"gonum.org/v1/plot/plotter"
)

// The chosen-path panel is thinned to what a reader can see, yet shows
// every path a strategy tried: a one-round visit among thousands of rounds
// keeps its marker, a long stay is one bar, and the markers are at most a
// few per column, however many rounds there are.
func TestChosenPathsThinned(t *testing.T) {
	const rounds = 100000
	path := make([]int16, rounds)
	for i := range path {
		path[i] = 1 // a long stay on path 1
		if i%7 == 0 {
			path[i] = 2 // frequent probes of path 2
		}
	}
	path[rounds/2] = 3 // one visit to path 3
	bars, pts := chosenMarks(path)
	seen := map[float64]bool{}
	for _, xy := range pts {
		seen[xy.Y] = true
	}
	for _, sg := range bars {
		seen[sg[0].Y] = true
	}
	markers := len(pts)
	for _, k := range []float64{1, 2, 3} {
		if !seen[k] {
			t.Errorf("path %v, chosen, is not drawn", k)
		}
	}
	if seen[0] {
		t.Error("path 0, never chosen, is drawn")
	}
	if markers > 3*chosenColumns {
		t.Errorf("%d markers for %d rounds; want at most one per path and column (%d columns)", markers, rounds, chosenColumns)
	}
}

// The best-path band has a corner only where the best path changes and
// covers every round.
func TestBestSteps(t *testing.T) {
	got := bestSteps([]int16{0, 0, 0, 2, 2})
	want := plotter.XYs{{X: 1, Y: 0}, {X: 3, Y: 0}, {X: 4, Y: 2}, {X: 5, Y: 2}}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
}
