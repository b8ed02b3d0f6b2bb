package layeredvideo

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/sim"
)

func TestLadder(t *testing.T) {
	if len(Ladder) != 8 || Ladder[0] != 0.088 || Ladder[7] != 20.5 {
		t.Fatalf("ladder %v, want 8 rungs from 0.088 to 20.5 Mbit/s (§4.5.1)", Ladder)
	}
	for _, bad := range []string{"index,mbps\n0,1\n1,0.5\n", "idx,rate\n0,1\n1,2\n", "index,mbps\n0,1\n"} {
		if _, err := parseLadder(bad); err == nil {
			t.Errorf("ladder %q accepted", bad)
		}
	}
}

var lattice = Scenario{Kind: "lattice", APSpacingM: 20, AreaM: 100, SpeedMps: 10, Duration: 20 * time.Second}

func TestRunSmoke(t *testing.T) {
	for _, v := range []Variant{
		{Label: "QC-MAB", Controller: QCMAB},
		{Label: "Peekaboo", Controller: Peekaboo},
		{Label: "LEAP", Controller: LEAP},
		{Label: "LEAP-FEC-BBR", Controller: LEAPFECBBR},
		{Label: "minRTT", Controller: MinRTT},
	} {
		r, err := Run(context.Background(), lattice, v, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		mq := 0.0
		for _, q := range r.Quality {
			mq += q / float64(len(r.Quality))
		}
		gp := 0.0
		for _, g := range r.GoodputMbps {
			gp += g / float64(len(r.GoodputMbps))
		}
		onTime := 0
		for _, d := range r.BLDelayMs {
			if d <= 150 {
				onTime++
			}
		}
		t.Logf("%-8s frames %d IR %.3f quality %.2f goodput %.2f P(BL≤150) %.3f handovers %d fec %d reward %.3f",
			v.Label, r.Frames, r.IR(), mq, gp, float64(onTime)/float64(len(r.BLDelayMs)), r.Handovers, r.FECFrames, mean(r.Reward))
		if r.Frames != int(lattice.Duration/FrameInterval) || len(r.Reward) != r.Frames {
			t.Fatalf("%s: %d frames, %d rewards", v.Label, r.Frames, len(r.Reward))
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / math.Max(float64(len(x)), 1)
}

func TestDeterministic(t *testing.T) {
	a, _ := Run(context.Background(), lattice, Variant{Controller: QCMAB}, 7, true)
	b, _ := Run(context.Background(), lattice, Variant{Controller: QCMAB}, 7, true)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different results")
	}
}

func TestBuiltinsParse(t *testing.T) {
	names := Names()
	want := []string{"qcmab-fig4-10", "qcmab-fig4-5", "qcmab-fig4-6", "qcmab-fig4-7", "qcmab-fig4-8", "qcmab-fig4-9", "qcmab-sweep-gamma"}
	if !slices.Equal(names, want) {
		t.Fatalf("built-ins %v, want the six figures 4.5–4.10 and the Γ sweep", names)
	}
	for _, n := range names {
		s, err := LoadBuiltin(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != n || s.Seeds < 10 {
			t.Errorf("%s: name %q, %d seeds (the issue asks ≥ 10)", n, s.Name, s.Seeds)
		}
	}
}

func TestSpecErrors(t *testing.T) {
	base := "name: x\nfigure: \"4.5\"\nscenario: {kind: lattice, ap_spacing_m: 20, area_m: 100, speed_mps: 10}\nduration_s: 5\nseeds: 1\n"
	for _, tc := range []struct{ yaml, want string }{
		{base + "variants:\n  - {label: a, controller: qcmab, gamma: 0}\n", ""},
		{base + "variants:\n  - {label: a, controller: qcmab, gamma: -1}\n", "reliability Γ"},
		{base + "variants:\n  - {label: a, controller: qcmab, arms: [ap99]}\n", `unknown arm "ap99"`},
		{base + "variants:\n  - {label: a, controller: qcmab, thresholds: {bandwidth_mbps: [5, 10], owd_ms: [150, 90], loss: [0, 0.1]}}\n", "owd thresholds"},
		{base + "variants:\n  - {label: a, controller: leap, raw: true}\n", "qcmab only"},
		{base + "variants:\n  - {label: a, controller: minrtt, epsilon: 1}\n", "qcmab only"},
		{base + "variants:\n  - {label: a, controller: qcmab, epsilon: 2}\n", "epsilon must be in [0, 1]"},
		{base + "seed: 7\nvariants:\n  - {label: a, controller: qcmab, epsilon: 1}\n", ""},
		{base + "variants:\n  - {label: a, controller: bbr}\n", `controller "bbr" unknown`},
		{base + "variants:\n  - {label: a, controller: qcmab}\n  - {label: a, controller: leap}\n", "repeated"},
		{base + "variants:\n  - {label: a, controller: qcmab}\nsweep_spacing_m: [0]\n", "sweep_spacing_m"},
		{base + "variants:\n  - {label: a, controller: qcmab}\nbogus: 1\n", `unknown field "bogus"`},
		{"name: x\nscenario: {kind: backbone, background: true, background_load: 1}\nduration_s: 5\nseeds: 1\nvariants:\n  - {label: a, controller: qcmab}\n", "background load 1"},
		{"name: x\nscenario: {kind: backbone, background_load: 0.5}\nduration_s: 5\nseeds: 1\nvariants:\n  - {label: a, controller: qcmab}\n", "only with background"},
		{"name: x\nscenario: {kind: moon}\nduration_s: 5\nseeds: 1\nvariants:\n  - {label: a, controller: qcmab}\n", `kind "moon"`},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("valid spec rejected: %v", err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("got %v, want one line containing %q", err, tc.want)
		}
	}
}

// TestBackgroundLoad: the background flows' on share is the scenario's
// background load — more of it leaves the video less of the backbone —
// and its default is the 0.5 the experiments ran with before it was a
// setting (equal 5 s means).
func TestBackgroundLoad(t *testing.T) {
	goodput := func(load float64) float64 {
		sc := Scenario{Kind: "backbone", Background: true, BackgroundLoad: load, Duration: 20 * time.Second}
		r, err := Run(context.Background(), sc, Variant{Controller: MinRTT}, 3, false)
		if err != nil {
			t.Fatal(err)
		}
		return mean(r.GoodputMbps)
	}
	light, half, heavy, def := goodput(0.1), goodput(0.5), goodput(0.9), goodput(0)
	t.Logf("goodput at load 0.1 / 0.5 / 0.9: %.2f / %.2f / %.2f Mbit/s", light, half, heavy)
	if !(heavy < light) {
		t.Errorf("goodput %.2f at load 0.9, %.2f at 0.1: the load does not take the backbone", heavy, light)
	}
	if def != half {
		t.Errorf("default load: goodput %v, load 0.5: %v", def, half)
	}
}

// TestLearningBaselines: the summary gives what judging a learner needs —
// the share of QC-MAB's slots on an untried arm (none for a fixed policy),
// the reward gain, and each variant's goodput peak ratio against the others;
// the first seed (seed:) changes the runs.
func TestLearningBaselines(t *testing.T) {
	spec := "name: t\nfigure: \"4.6\"\nscenario: {kind: lattice, ap_spacing_m: 20, area_m: 60, speed_mps: 10}\nduration_s: 5\nseeds: 1\nvariants:\n  - {label: q, controller: qcmab}\n  - {label: u, controller: qcmab, epsilon: 1}\n  - {label: m, controller: minrtt}\n"
	s, err := Parse("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Execute(context.Background(), s, workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	q, u, m := sum.Rows[0], sum.Rows[1], sum.Rows[2]
	if !(q.UntriedPct > 0 && u.UntriedPct > 0) || m.UntriedPct != 0 {
		t.Errorf("untried %%: qcmab %g, uniform %g, minrtt %g; want > 0, > 0, 0", q.UntriedPct, u.UntriedPct, m.UntriedPct)
	}
	if len(q.GoodputPeakRatio) != 2 || !(q.GoodputPeakRatio["m"] > 0) || q.GoodputPeakRatio["q"] != 0 {
		t.Errorf("peak ratios %v, want one per other variant", q.GoodputPeakRatio)
	}
	if q.GoodputPeakRatio["m"] < q.GoodputMbps/m.GoodputMbps*0.999 {
		t.Errorf("peak ratio %g below the means' ratio %g", q.GoodputPeakRatio["m"], q.GoodputMbps/m.GoodputMbps)
	}
	s2, _ := Parse("t.yaml", []byte(spec+"seed: 2\n"))
	sum2, err := Execute(context.Background(), s2, workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(sum.Rows, sum2.Rows) {
		t.Error("seed: 2 ran the same runs as seed 1")
	}
}

// Results do not depend on the worker count.
func TestExecuteWorkersIndependent(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nfigure: \"4.7\"\nscenario: {kind: lattice, ap_spacing_m: 20, area_m: 60, speed_mps: 10}\nduration_s: 5\nseeds: 2\nreplay: true\nvariants:\n  - {label: a, controller: qcmab}\n  - {label: b, controller: qcmab, raw: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Execute(context.Background(), s, workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Execute(context.Background(), s, workpool.Options{Workers: 3})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("1 and 3 workers disagree")
	}
}

// The built-in Γ × speed sweep expands to 3 × 3 points of 4 variants × 10
// seeds, each point the file with its two fields set; a sweep that changes
// which variants run, or sets a value the spec refuses, is a one-line error
// naming the point.
func TestLoadPlan(t *testing.T) {
	p, err := LoadPlan(builtin, "experiments/qcmab-sweep-gamma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Swept || len(p.Points) != 9 || p.Runs() != 9*4*10 {
		t.Fatalf("swept %v, %d points, %d runs; want 9 points, 360 runs", p.Swept, len(p.Points), p.Runs())
	}
	last := p.Specs[8]
	if p.Points[8].Label() != "scenario.speed_mps=20, variants[0].gamma=0.99" || last.Scenario.SpeedMps != 20 || last.Variants[0].Gamma != 0.99 || last.Sweep != nil {
		t.Fatalf("point 8 %s: speed %g, Γ %g, sweep %v", p.Points[8].Label(), last.Scenario.SpeedMps, last.Variants[0].Gamma, last.Sweep)
	}
	if first := p.Specs[0]; first.Scenario.SpeedMps != 5 || first.Variants[0].Gamma != 0.9 || first.Scenario.AreaM != 100 {
		t.Fatalf("point 0: %+v", first.Scenario)
	}
	base := "name: x\nmode: video\nscenario: {kind: lattice, ap_spacing_m: 20, area_m: 60, speed_mps: 10}\nduration_s: 5\nseeds: 1\nvariants:\n  - {label: a, controller: qcmab}\n"
	for _, tc := range []struct{ sweep, want string }{
		{"sweep:\n  params:\n    variants[0].label: [a, b]\n", "not which variants"},
		{"sweep:\n  params:\n    variants[0].gamma: [0.9, 1.5]\n", "sweep point variants[0].gamma=1.5: "},
		{"sweep:\n  params:\n    scenario.kind: [moon]\n", `kind "moon"`},
		{"sweep:\n  params:\n    nosuch: [1]\n", "neither the experiment nor its scenario"},
	} {
		fsys := fstest.MapFS{"x.yaml": {Data: []byte(base + tc.sweep)}}
		_, err := LoadPlan(fsys, "x.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line containing %q", tc.sweep, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		data, _ := builtin.ReadFile("experiments/" + n + ".yaml")
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if s.Seeds < 1 || len(s.Variants) == 0 {
			t.Fatalf("accepted an invalid spec: %+v", s)
		}
	})
}

func FuzzLadder(f *testing.F) {
	f.Add(sintelCSV)
	f.Add("index,mbps\n0,1\n1,2\n")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := parseLadder(s)
		if err != nil {
			return
		}
		for i := 1; i < len(l); i++ {
			if !(l[i] > l[i-1]) {
				t.Fatalf("accepted a non-increasing ladder %v", l)
			}
		}
	})
}

// BenchmarkRun is one 60 s run of each scenario kind under QC-MAB: the
// unit the experiment set is made of (README: the whole set's time).
func BenchmarkRun(b *testing.B) {
	for _, sc := range []Scenario{
		{Kind: "lattice", APSpacingM: 20, AreaM: 100, SpeedMps: 10, Duration: 60 * time.Second},
		{Kind: "backbone", Background: true, Duration: 60 * time.Second},
	} {
		b.Run(sc.Kind, func(b *testing.B) {
			for i := range b.N {
				if _, err := Run(context.Background(), sc, Variant{Controller: QCMAB}, uint64(i)+1, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A run whose context has ended stops inside the simulation and reports
// the context's error, not results from a cut-short run (Ctrl-C).
func TestRunStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := Run(ctx, lattice, Variant{Controller: QCMAB}, 1, false); !errors.Is(err, context.Canceled) || r != nil {
		t.Errorf("cancelled run: %v, %v; want no result and context.Canceled", r, err)
	}
}

// TestFadeMargin: the scenario's fading margin sets the loss an AP's link
// has at a given distance (more margin, more loss), 0 is the default, and
// only a margin in [0, 40] dB is accepted.
func TestFadeMargin(t *testing.T) {
	loss := func(margin, distM float64) float64 {
		w := newWorld(sim.New(1), Scenario{Kind: "lattice", APSpacingM: 20, AreaM: 100, FadeMarginDB: margin, Duration: time.Second})
		w.hx, w.hy = w.aps[0].x+distM, w.aps[0].y
		_, l := w.access(0)
		return l
	}
	for _, d := range []float64{25, 30, 35} {
		low, def, high := loss(10, d), loss(0, d), loss(22, d)
		if def != loss(defaultFadeMarginDB, d) {
			t.Errorf("%g m: margin 0 gives loss %g, the default %g dB gives %g", d, def, defaultFadeMarginDB, loss(defaultFadeMarginDB, d))
		}
		if !(low <= def && def <= high && low < high) {
			t.Errorf("%g m: loss at 10 dB / the default / 22 dB = %g / %g / %g, want rising with the margin", d, low, def, high)
		}
	}
	for _, tc := range []struct {
		margin float64
		ok     bool
	}{{0, true}, {14, true}, {40, true}, {-1, false}, {40.5, false}} {
		err := Scenario{Kind: "lattice", APSpacingM: 20, AreaM: 100, FadeMarginDB: tc.margin, Duration: time.Second}.validate()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "fade margin")) {
			t.Errorf("margin %g: %v, want ok %v", tc.margin, err, tc.ok)
		}
	}
}
