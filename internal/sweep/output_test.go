package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/results"
)

// testOutcome is a two-point, two-series sweep whose series differ by less
// than their spread at point p1.
func testOutcome() *Outcome {
	ys := [][]float64{{10, 11}, {20, 12}}
	return &Outcome{
		Name: "t", Design: "grid", Series: []string{"a", "b"},
		Points:  []Point{{ID: "p0", Assigns: []Assign{{Key: "x", Value: "1"}}}, {ID: "p1", Assigns: []Assign{{Key: "x", Value: "2"}}}},
		Columns: []string{"y"}, Row: func(p, s int) []string { return []string{"0"} },
		Metric: "y", Y: func(p, s int) float64 { return ys[p][s] },
		Spread:      func(p, s int) (float64, float64) { return ys[p][s] - 2, ys[p][s] + 2 },
		SpreadLabel: "95 % interval of the mean over 3 seeds",
	}
}

// A sweep's figure draws each series' spread over seeds as error bars,
// named in its title, in both PNG and SVG.
func TestSweepFigureShowsSpread(t *testing.T) {
	draw := func(o *Outcome) string {
		d, err := results.Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteOutcome(d, o); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"sweep.png", "sweep.svg"} {
			if _, err := os.Stat(filepath.Join(d.Root(), f)); err != nil {
				t.Fatal(err)
			}
		}
		svg, err := os.ReadFile(filepath.Join(d.Root(), "sweep.svg"))
		if err != nil {
			t.Fatal(err)
		}
		return string(svg)
	}
	with := draw(testOutcome())
	plain := testOutcome()
	plain.Spread = nil
	without := draw(plain)
	if !strings.Contains(with, "95 % interval of the mean over 3 seeds") {
		t.Error("the figure does not say what its bars are")
	}
	// Each error bar is a stroke of its own: two series × two points more.
	if n, m := strings.Count(with, "<path"), strings.Count(without, "<path"); n < m+4 {
		t.Errorf("%d strokes with the spread, %d without: no error bars drawn", n, m)
	}
}

// An interval that does not hold its value is a mode's bug, reported.
func TestSweepSpreadMustHoldY(t *testing.T) {
	o := testOutcome()
	o.Spread = func(p, s int) (float64, float64) { return 0, 1 }
	d, err := results.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteOutcome(d, o); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("an interval [0, 1] around 10: %v", err)
	}
}
