package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCostEstimate: the arithmetic of a first run's up-front estimate.
func TestCostEstimate(t *testing.T) {
	table := costTable{
		Quick: &costRun{Date: "2026-11-28", Steps: []stepCost{
			{Label: "sim-a", Experiment: "sim-a", Points: 2, CPU: 10, Wall: 6},
			{Label: "agent-b", Experiment: "agent-b", Realtime: true, Points: 1, CPU: 1, Wall: 8},
			{Label: "sim-c × x", Experiment: "sim-c", Points: 3, CPU: 30, Wall: 20},
			{Label: "one", Experiment: "one", Points: 1, CPU: 12, Wall: 12},
			{Label: "own-sweep", Experiment: "own-sweep", Swept: true, Points: 1, CPU: 12, Wall: 3},
		}},
		Full: &costRun{Date: "2026-11-29", Steps: []stepCost{
			{Label: "sim-a", Experiment: "sim-a", Points: 20, CPU: 90, Wall: 50},
		}},
	}
	cases := []struct {
		name    string
		label   string
		exp     string
		points  float64
		quick   bool
		workers int
		want    float64 // seconds; < 0: not priced
		date    string
	}{
		{"quick step: CPU over the workers", "sim-a", "sim-a", 2, true, 2, 5, "2026-11-28"},
		{"one worker", "sim-a", "sim-a", 2, true, 1, 10, "2026-11-28"},
		{"workers 0 counts as one", "sim-a", "sim-a", 2, true, 0, 10, "2026-11-28"},
		{"real time: wall, whatever the workers", "agent-b", "agent-b", 1, true, 16, 8, "2026-11-28"},
		{"full step measured in full", "sim-a", "sim-a", 20, false, 3, 30, "2026-11-29"},
		{"full step priced per point from quick", "sim-c", "sim-c", 10, false, 2, 50, "2026-11-28"},
		{"other label of the same experiment: per point", "sim-c × y", "sim-c", 6, true, 1, 60, "2026-11-28"},
		{"real time per point", "agent-b × z", "agent-b", 2, false, 1, 16, "2026-11-28"},
		{"one point keeps one worker busy", "one", "one", 1, true, 4, 12, "2026-11-28"},
		{"a file's own sweep keeps every worker busy", "own-sweep", "own-sweep", 1, true, 4, 3, "2026-11-28"},
		{"unknown experiment", "sim-d", "sim-d", 1, true, 1, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := table.estimate([]string{c.label}, []string{c.exp}, []float64{c.points}, c.quick, c.workers)
			got, ok := e.secs[c.label]
			switch {
			case c.want < 0 && (ok || e.known != 0):
				t.Fatalf("priced %g s, want not priced", got)
			case c.want >= 0 && (!ok || e.known != 1):
				t.Fatalf("not priced, want %g s", c.want)
			case c.want >= 0 && got != c.want:
				t.Errorf("%g s, want %g s", got, c.want)
			}
			if e.date != c.date {
				t.Errorf("date %q, want %q", e.date, c.date)
			}
		})
	}
	if (costTable{}).estimate([]string{"a"}, []string{"a"}, []float64{1}, true, 1).known != 0 {
		t.Error("an empty table priced a step")
	}
}

// TestProgressPlanFromCosts: a first run's first line sums the table's
// prices and names their date; a step the table lacks is said to follow
// the first steps, and the last run's times win where there are any.
func TestProgressPlanFromCosts(t *testing.T) {
	table := costTable{Quick: &costRun{Date: "2026-11-28", Steps: []stepCost{
		{Label: "a", Experiment: "a", Points: 2, CPU: 120, Wall: 100},
		{Label: "b", Experiment: "b", Realtime: true, Points: 1, CPU: 1, Wall: 30},
	}}}
	now := func() time.Time { return time.Unix(0, 0) }
	plan := func(runs []claimRun) string {
		var buf bytes.Buffer
		p := newProgress(&buf, "/nonexistent/index.json", runs, 2, now, table, true)
		return p.planEstimate()
	}
	if got, want := plan([]claimRun{{Name: "a", Seeds: 2}, {Name: "b", Seeds: 1}}),
		"about 1m30s on this machine with 2 workers, from costs measured 2026-11-28"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := plan([]claimRun{{Name: "a", Seeds: 2}, {Name: "c", Seeds: 1}}); !strings.HasPrefix(got, "about 1m00s for 1 of the 2 steps") {
		t.Errorf("got %q, want 1 of 2 steps priced", got)
	}
	if got := plan([]claimRun{{Name: "c", Seeds: 1}}); !strings.HasPrefix(got, "no earlier run") {
		t.Errorf("got %q, want no estimate", got)
	}
}

// TestShippedCosts: the table the binary ships decodes, and each half it
// has names its date and every step's points.
func TestShippedCosts(t *testing.T) {
	data, err := os.ReadFile("reproduce_costs.json")
	if err != nil {
		t.Fatal(err)
	}
	table, err := readCosts(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []*costRun{table.Quick, table.Full} {
		if run == nil {
			continue
		}
		if run.Date == "" || run.Command == "" || len(run.Steps) == 0 {
			t.Errorf("half without date, command or steps: %+v", run)
		}
		for _, s := range run.Steps {
			if s.Points <= 0 || s.CPU < 0 || s.Wall < 0 {
				t.Errorf("step %+v", s)
			}
		}
	}
	if table.Quick == nil {
		t.Error("no --quick half: regenerate it (docs/reproducing.md, How long it takes)")
	}
	for _, bad := range []string{"{", `{"quick":{"steps":[{"label":"a","points":0}]}}`, `{"full":{"steps":[{"label":"a","points":1,"cpu_s":-1}]}}`} {
		if _, err := readCosts([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// FuzzReadCosts: any table readCosts accepts prices every step it knows
// at a finite, non-negative time.
func FuzzReadCosts(f *testing.F) {
	f.Add([]byte(`{"quick":{"date":"2026-11-28","steps":[{"label":"a","experiment":"a","points":2,"cpu_s":10,"wall_s":6}]}}`))
	f.Add([]byte(`{"full":{"steps":[{"label":"b","experiment":"b","realtime":true,"points":1,"cpu_s":1,"wall_s":8}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := readCosts(data)
		if err != nil {
			return
		}
		for _, quick := range []bool{true, false} {
			e := table.estimate([]string{"a", "b"}, []string{"a", "b"}, []float64{3, 5}, quick, 2)
			for l, s := range e.secs {
				if !(s >= 0) || math.IsInf(s, 0) {
					t.Fatalf("%s priced %g s", l, s)
				}
			}
		}
	})
}

// TestReproduceCostsBadInput: --costs records a whole run, alone.
func TestReproduceCostsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--costs", "x.json", "--paper", "cybertwin"}, "--costs records a whole run's costs, not --paper's"},
		{[]string{"reproduce", "--costs", "x.json", "--counts"}, "--md, --counts, --calibrate and --costs exclude each other"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, tc.want) {
			t.Errorf("%v: exit %d, last stderr line %q; want exit 2 and %q", tc.args, code, last, tc.want)
		}
	}
}
