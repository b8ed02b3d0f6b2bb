package sweep

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
)

func block(t *testing.T, src string) *Block {
	t.Helper()
	var b Block
	if err := yaml.Unmarshal([]byte(src), &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestGridOrderAndIDs(t *testing.T) {
	b := block(t, `
params:
  paths[1].down.delay_ms: [10, 20.0, 5e1]
  strategies[0].window: [30, 100]
`)
	pts, err := b.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, p.Label())
	}
	want := []string{
		"paths[1].down.delay_ms=10, strategies[0].window=30",
		"paths[1].down.delay_ms=10, strategies[0].window=100",
		"paths[1].down.delay_ms=20, strategies[0].window=30",
		"paths[1].down.delay_ms=20, strategies[0].window=100",
		"paths[1].down.delay_ms=50, strategies[0].window=30",
		"paths[1].down.delay_ms=50, strategies[0].window=100",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An ID depends on the assignments only: another spec that lists the
	// parameters in another order, or more values, gives the same point the
	// same ID.
	b2 := block(t, `
params:
  strategies[0].window: [100, 30, 7]
  paths[1].down.delay_ms: [50, 1e1]
`)
	pts2, err := b2.Expand()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, p := range pts {
		ids[p.Label()] = p.ID
	}
	shared := 0
	for _, p := range pts2 {
		if id, ok := ids[p.Label()]; ok {
			shared++
			if id != p.ID {
				t.Errorf("%s: ID %s in one spec, %s in the other", p.Label(), id, p.ID)
			}
		}
	}
	if shared != 4 {
		t.Fatalf("%d shared points, want 4", shared)
	}
	seen := map[string]bool{}
	for _, p := range pts {
		if seen[p.ID] {
			t.Fatalf("duplicate ID %s", p.ID)
		}
		seen[p.ID] = true
	}
}

func TestBadBlocks(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`params: {a: []}`, "non-empty list"},
		{`params: {a: [1, 1.0]}`, "listed twice"},
		{`params: {a: [[1]]}`, "scalars"},
		{`params: {"a[x]": [1]}`, "not a non-negative integer"},
		{`design: lhs`, "at least one range"},
		{`design: lhs
ranges: {a: {min: 2, max: 1}}
points: 4`, "must be below max"},
		{`design: lhs
ranges: {a: {min: 0, max: 1, log: true}}
points: 4`, "log range needs min > 0"},
		{`design: lhs
ranges: {a: {min: 0, max: 1}}
points: 1`, "outside [2,"},
		{`design: lhs
ranges: {a: {min: 1, max: 9, int: true}}
points: 20`, "draw a="},
		{`design: lhs
points: 51111
ranges: {a.b: {min: 1, max: 9, log: true}}`, "draw a.b="}, // strata finer than 6 digits (FuzzExpand)
		{`design: wsp`, "not one of grid, lhs"},
		{`params: {a: [1]}
points: 3`, "belong to design lhs"},
	} {
		_, err := block(t, tc.src).Expand()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.src, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error spans lines: %q", tc.src, err)
		}
	}
}

// In a Latin hypercube every one of the n strata of every range holds exactly
// one point, and the same seed gives the same design.
func TestLHSStrata(t *testing.T) {
	src := `
design: lhs
points: 20
seed: 7
ranges:
  paths[0].down.rate_mbps: {min: 1, max: 1000, log: true}
  paths[0].down.loss: {min: 0, max: 0.05}
`
	pts, err := block(t, src).Expand()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := block(t, src).Expand()
	if !slices.EqualFunc(pts, again, func(a, b Point) bool { return a.ID == b.ID }) {
		t.Fatal("same seed, different design")
	}
	strata := map[string][]int{}
	for _, p := range pts {
		for _, a := range p.Assigns {
			v, _ := strconv.ParseFloat(a.Value, 64)
			var u float64
			switch a.Key {
			case "paths[0].down.rate_mbps":
				u = math.Log(v/1) / math.Log(1000)
			default:
				u = v / 0.05
			}
			strata[a.Key] = append(strata[a.Key], int(u*20))
		}
	}
	for k, s := range strata {
		slices.Sort(s)
		for i, x := range s {
			if x != i {
				t.Fatalf("%s: strata %v, want each of 0…19 once", k, s)
			}
		}
	}
}

func TestApply(t *testing.T) {
	var spec, scen yaml.Node
	if err := yaml.Unmarshal([]byte("name: x\nrounds: 100\nstrategies:\n  - {strategy: sw-ucb, window: 30}\n"), &spec); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte("paths:\n  - name: a\n    down: {delay_ms: 5}\n  - name: b\n    down: {delay_ms: 5}\n"), &scen); err != nil {
		t.Fatal(err)
	}
	p := newPoint([]Assign{
		{Key: "paths[1].down.delay_ms", Value: "20"},
		{Key: "paths[1].down.loss", Value: "0.01"}, // new last name
		{Key: "strategies[0].window", Value: "100"},
		{Key: "rounds", Value: "50"},
	})
	if err := Apply(&spec, &scen, p); err != nil {
		t.Fatal(err)
	}
	var gotSpec struct {
		Rounds     int
		Strategies []struct{ Window int }
	}
	var gotScen struct {
		Paths []struct {
			Down struct {
				DelayMs float64 `yaml:"delay_ms"`
				Loss    float64
			}
		}
	}
	if err := spec.Decode(&gotSpec); err != nil {
		t.Fatal(err)
	}
	if err := scen.Decode(&gotScen); err != nil {
		t.Fatal(err)
	}
	if gotSpec.Rounds != 50 || gotSpec.Strategies[0].Window != 100 {
		t.Errorf("spec: %+v", gotSpec)
	}
	if d := gotScen.Paths[1].Down; d.DelayMs != 20 || d.Loss != 0.01 || gotScen.Paths[0].Down.DelayMs != 5 {
		t.Errorf("scenario: %+v", gotScen)
	}
	for _, tc := range []struct{ key, want string }{
		{"paths[2].down.delay_ms", "has 2 entries, no [2]"},
		{"paths[0].up.delay_ms", `no field "up"`},
		{"paths[0].down", "only a scalar"},
		{"nosuch.x", "neither the experiment nor its scenario"},
		{"name[0]", "is not a list"},
	} {
		err := Apply(&spec, &scen, newPoint([]Assign{{Key: tc.key, Value: "1"}}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.key, err, tc.want)
		}
	}
	if err := Apply(&spec, nil, newPoint([]Assign{{Key: "scenario.paths[0].down.loss", Value: "1"}})); err == nil {
		t.Error("scenario. prefix without a scenario: no error")
	}
}

func TestShard(t *testing.T) {
	for _, bad := range []string{"", "1", "a/b", "2/2", "-1/3", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): no error", bad)
		}
	}
	counts := make([]int, 3)
	for k := range 100 {
		owners := 0
		for i := range 3 {
			if (Shard{I: i, N: 3}).Owns(k) {
				owners++
				counts[i]++
			}
		}
		if owners != 1 {
			t.Fatalf("run %d has %d owners", k, owners)
		}
	}
	if counts[0] != 34 || counts[1] != 33 || counts[2] != 33 {
		t.Fatalf("unbalanced: %v", counts)
	}
}

func FuzzExpand(f *testing.F) {
	f.Add("params: {paths[1].down.delay_ms: [10, 20]}")
	f.Add("design: lhs\npoints: 5\nranges: {a.b: {min: 1, max: 9, log: true}}")
	f.Fuzz(func(t *testing.T, src string) {
		var b Block
		if yaml.Unmarshal([]byte(src), &b) != nil {
			return
		}
		pts, err := b.Expand()
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, p := range pts {
			if ids[p.ID] {
				t.Fatalf("duplicate point %s", p.Label())
			}
			ids[p.ID] = true
		}
	})
}

func TestSlurmScript(t *testing.T) {
	s, err := Slurm(SlurmJob{Spec: "my exp.yaml", Shards: 8, Out: "results/x", Binary: "/opt/hetquic", Partition: "short", Time: "00:10:00"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#SBATCH --array=0-7\n",
		"#SBATCH --partition=short\n",
		"#SBATCH --time=00:10:00\n",
		`exp run 'my exp.yaml' --shard "$i/8"`,
		"hetquic=/opt/hetquic\n",
		`exec "$hetquic" exp merge --out "$out" "$out"/shards/*`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "--mem") {
		t.Error("--mem written although unset")
	}
	for _, bad := range []SlurmJob{
		{Spec: "x", Shards: 0, Out: "o", Binary: "b"},
		{Spec: "x", Shards: 2, Out: "o", Binary: "b", Partition: "a;b c"},
		{Spec: "x", Shards: 2, Out: "o %j", Binary: "b"},
	} {
		if _, err := Slurm(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("shellQuote: %s", got)
	}
}

// An experiment that writes its scenario inline (mode video) sweeps the
// scenario's fields in its own file, with or without the scenario. prefix.
func TestApplyInlineScenario(t *testing.T) {
	var spec yaml.Node
	if err := yaml.Unmarshal([]byte("name: x\nscenario: {kind: lattice, ap_spacing_m: 20}\n"), &spec); err != nil {
		t.Fatal(err)
	}
	p := newPoint([]Assign{{Key: "scenario.ap_spacing_m", Value: "30"}, {Key: "scenario.speed_mps", Value: "5"}})
	if err := Apply(&spec, nil, p); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scenario struct {
			APSpacingM float64 `yaml:"ap_spacing_m"`
			SpeedMps   float64 `yaml:"speed_mps"`
		}
	}
	if err := spec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Scenario.APSpacingM != 30 || got.Scenario.SpeedMps != 5 {
		t.Fatalf("scenario %+v, want spacing 30, speed 5", got.Scenario)
	}
	var named yaml.Node
	if err := yaml.Unmarshal([]byte("name: x\nscenario: ../s.yaml\n"), &named); err != nil {
		t.Fatal(err)
	}
	if err := Apply(&named, nil, newPoint([]Assign{{Key: "scenario.paths[0].down.loss", Value: "0"}})); err == nil || !strings.Contains(err.Error(), "has no scenario") {
		t.Fatalf("a named scenario that is not loaded: %v", err)
	}
}

// RunOwned gives each run its (point, run) and returns it under its run
// number; shards are disjoint and together equal the single-process run.
func TestRunOwned(t *testing.T) {
	set := Single(5, Loader[int]{Runs: func(n int) int { return n }})
	run := func(_ context.Context, point, r int) (*int, error) { v := 100*point + r; return &v, nil }
	all, err := RunOwned(context.Background(), set, All, workpool.Options{Workers: 3}, nil, run)
	if err != nil || len(all) != 5 {
		t.Fatalf("all: %v, %d runs", err, len(all))
	}
	union := map[int]int{}
	for i := range 2 {
		part, err := RunOwned(context.Background(), set, Shard{I: i, N: 2}, workpool.Options{}, nil, run)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range part {
			if _, dup := union[k]; dup || k%2 != i || *v != *all[k] {
				t.Fatalf("shard %d: run %d = %d (all: %d), twice %v", i, k, *v, *all[k], dup)
			}
			union[k] = *v
		}
	}
	if len(union) != 5 {
		t.Fatalf("shards cover %d of 5 runs", len(union))
	}
	var progress strings.Builder
	_, err = RunOwned(context.Background(), set, All, workpool.Options{Workers: 1, Progress: &progress}, func(v *int) string { return "v=" + strconv.Itoa(*v) }, run)
	if err != nil || !strings.Contains(progress.String(), "5/5 runs (v=4)") {
		t.Fatalf("progress %q, %v", progress.String(), err)
	}
	if _, err := RunOwned(context.Background(), set, All, workpool.Options{}, nil, func(context.Context, int, int) (*int, error) {
		return nil, errors.New("boom")
	}); err == nil || err.Error() != "boom" {
		t.Fatalf("a failing run: %v", err)
	}
}

// A sweep summary's JSON is the flat object a hand-written struct per mode
// wrote before it: header, info, design, params, points with their data
// inline.
func TestSummaryJSONInline(t *testing.T) {
	type point struct {
		Rows []int `json:"rows"`
	}
	pts := []Point{newPoint([]Assign{{"a", "1"}}), newPoint([]Assign{{"a", "2"}})}
	info := struct {
		Figure string `json:"figure"`
	}{"4.8"}
	s := NewSummary(results.NewHeader("x", "video", []uint64{1}), info, Grid, pts, func(i int) point { return point{[]int{i}} })
	got, err := results.MarshalSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	flat := struct {
		results.Header
		Figure string   `json:"figure"`
		Design string   `json:"design"`
		Params []string `json:"params"`
		Points []struct {
			ID      string   `json:"id"`
			Assigns []Assign `json:"assigns"`
			Rows    []int    `json:"rows"`
		} `json:"points"`
	}{Header: s.Header, Figure: "4.8", Design: Grid, Params: []string{"a"}}
	for i, p := range pts {
		flat.Points = append(flat.Points, struct {
			ID      string   `json:"id"`
			Assigns []Assign `json:"assigns"`
			Rows    []int    `json:"rows"`
		}{p.ID, p.Assigns, []int{i}})
	}
	want, err := results.MarshalSummary(&flat)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("summary JSON:\n%s\nwant\n%s", got, want)
	}
}

// TestValue: Value reads what a sweep over the same field would replace —
// nested, indexed, spec.-prefixed — and nothing where the file writes no
// scalar there.
func TestValue(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("rounds: 100\nvariants:\n  - {cc: bbr}\n  - {cc: cubic, x: [1, 2]}\nride: {policy: ../p.json}\nscenario: s.yaml\n"), &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"rounds": "100", "spec.rounds": "100", "variants[1].cc": "cubic", "variants[1].x[1]": "2", "ride.policy": "../p.json",
		"variants[2].cc": "", "variants.cc": "", "ride": "", "scenario.paths[0].rate": "", "seed": "", "rounds[0]": "", "bad[": "",
	} {
		got, ok := Value(&doc, key)
		if got != want || ok != (want != "") {
			t.Errorf("Value(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
}
