package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoPaths = `name: two
paths:
  - name: fast
    up:   {delay_ms: 10, rate_mbps: 20, loss: 0.005}
    down: {delay_ms: 10, rate_mbps: 20, loss: 0.005}
  - name: slow
    up:   {delay_ms: 40, jitter_ms: 3, rate_mbps: 10}
    down: {delay_ms: 40, jitter_ms: 3, rate_mbps: 10}
events:
  - {at_s: 0.5, path: fast, outage_s: 0.3}
`

// TestRunIndependentOfWorkers runs a small experiment with 1 and 3 workers
// and requires identical results, and checks every output file appears.
func TestRunIndependentOfWorkers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	f := write(t, dir, "e.yaml", `name: e
scenario: two.yaml
seeds: 2
app: {kind: bulk, size_mb: 1}
path_counts: [1, 2]
variants:
  - {label: MAMS, scheduler: mams}
  - {label: RR, scheduler: rr, cc: cubic}
`)
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(context.Background(), s, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), s, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) != 8 {
		t.Fatalf("%d runs, want 2 variants × 2 path counts × 2 seeds", len(a.Runs))
	}
	for i := range a.Runs {
		x, y := *a.Runs[i], *b.Runs[i]
		x.WallS, y.WallS = 0, 0
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("run %d differs between 1 and 3 workers", i)
		}
		if !x.Completed {
			t.Fatalf("run %d (%s, %d paths) did not complete", i, x.Label, x.Paths)
		}
	}
	out := filepath.Join(dir, "out")
	files, err := WriteAll(out, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"summary.json", "report.md", "goodput.png", "delivery_delay_cdf.png", "fct_cdf.png", "p90_delay_vs_paths.png", "runs/MAMS_p2_seed1_delay.csv"} {
		if _, err := os.Stat(filepath.Join(out, want)); err != nil {
			t.Errorf("missing %s (wrote %d files)", want, len(files))
		}
	}
}

func TestDashAndTopology(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	f := write(t, dir, "d.yaml", `name: d
scenario: two.yaml
app: {kind: dash, segment_s: 1, bitrate_mbps: 4, segments: 5, deadline_s: 2}
variants: [{scheduler: minrtt}]
`)
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run := r.Runs[0]; run.Segments != 5 || !run.Completed {
		t.Fatalf("dash run: %d segments, completed %v", run.Segments, run.Completed)
	}
	f = write(t, dir, "a.yaml", `name: a
topology: builtin:abilene
app: {size_mb: 0.5}
flows: {count: 4, interval_s: 0.2, pairs: [[SEA, NYC], [LAX, WDC]]}
variants: [{scheme: quic}, {scheme: lrf}, {scheme: pquic}, {scheme: minfct}]
`)
	if s, err = Load(f); err != nil {
		t.Fatal(err)
	}
	if r, err = Run(context.Background(), s, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, run := range r.Runs {
		if !run.Completed || len(run.Flows) != 4 {
			t.Fatalf("%s: completed %v, %d flows", run.Label, run.Completed, len(run.Flows))
		}
		want := 3
		if run.Label == "quic" {
			want = 1
		}
		if got := len(run.Flows[0].Paths); got != want {
			t.Errorf("%s: %d paths, want %d", run.Label, got, want)
		}
	}
}

// TestStreamWindowWired: transport.stream_window_bytes reaches the
// connection (0 leaves the simulator's default).
func TestStreamWindowWired(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	f := write(t, dir, "sw.yaml", "name: sw\nscenario: two.yaml\napp: {size_mb: 1}\ntransport: {stream_window_bytes: 100000}\nvariants: [{}]\n")
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.connConfig(s.Variants[0], 0).StreamWindow; got != 100000 {
		t.Fatalf("stream window %d, want 100000", got)
	}
}

// TestValidateAgainstConnDefaults: a spec validates with the defaults the
// connection runs with (sim.ConnConfig.WithDefaults), not a copy of them:
// auto_tune with a stream window but no maximum is the run's own ceiling,
// and the validated configuration is the one RunOne builds.
func TestValidateAgainstConnDefaults(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	for _, body := range []string{
		"transport: {auto_tune: true, stream_window_bytes: 1048576}\nvariants: [{}]\n",
		"transport: {auto_tune: true, stream_window_bytes: 16777216, recv_window_bytes: 33554432}\nvariants: [{}]\n",
		"transport: {auto_tune: true}\nvariants: [{}, {label: big, stream_window_bytes: 8388608}]\n",
	} {
		f := write(t, dir, "ok.yaml", "name: ok\nscenario: two.yaml\napp: {size_mb: 1}\n"+body)
		s, err := Load(f)
		if err != nil {
			t.Errorf("%q: %v", body, err)
			continue
		}
		if _, err := s.RunOne(context.Background(), len(s.Variants)-1, 0, s.Seed); err != nil {
			t.Errorf("%q: run: %v", body, err)
		}
	}
}

func TestBadSpec(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "two.yaml", twoPaths)
	write(t, dir, "island.yaml", "name: island\nnodes: [a, b, c]\nlinks:\n  - {a: a, b: b, rate_mbps: 10}\n")
	for _, c := range []struct{ body, want string }{
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{scheduler: fastest}]\n", `variants[0].scheduler: unknown scheduler "fastest"`},
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{cc: vegas}]\n", `variants[0].cc: unknown congestion control "vegas"`},
		{"scenario: two.yaml\napp: {size_mb: -1}\nvariants: [{}]\n", "app.size_mb: -1 is outside"},
		{"scenario: two.yaml\napp: {size_mb: 1}\npath_counts: [3]\nvariants: [{}]\n", "path_counts[0]: 3 is outside [1, 2]"},
		{"scenario: two.yaml\napp: {size_mb: 1}\nseeds: -2\nvariants: [{}]\n", "seeds: -2 is outside"},
		{"scenario: two.yaml\napp: {size_mb: 1}\ntransport: {packet_bytes: 50}\nvariants: [{}]\n", "transport.packet_bytes: 50 is outside"},
		{"scenario: two.yaml\napp: {size_mb: 1}\ntransport: {stream_window_bytes: 1000}\nvariants: [{}]\n", "transport.stream_window_bytes: 1000 is smaller than a packet"},
		{"scenario: two.yaml\napp: {size_mb: 1}\ntransport: {stream_window_bytes: -5}\nvariants: [{}]\n", "transport.stream_window_bytes: -5 is smaller than a packet"},
		{"scenario: two.yaml\napp: {kind: vidoe}\nvariants: [{}]\n", `app.kind: unknown application "vidoe"`},
		{"scenario: two.yaml\napp: {kind: video, fps: 25, bitrate_mbps: 4, frames: 10}\nvariants: [{}]\n", "app.deadline_ms: 0 is outside"},
		{"scenario: two.yaml\napp: {kind: video, fps: 0}\nvariants: [{}]\n", "app.fps: 0 is outside"},
		{"scenario: two.yaml\napp: {kind: streams, streams: 0}\nvariants: [{}]\n", "app.streams: 0 is outside"},
		{"scenario: two.yaml\napp: {kind: cbr, rate_mbps: 2}\nvariants: [{}]\n", "app.cbr_s: 0 is outside"},
		{"scenario: two.yaml\napp: {kind: reqresp, requests: 3, resp_kb: -1}\nvariants: [{}]\n", "app.resp_kb: -1 is outside"},
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{stream_window_bytes: 10}]\n", "variants[0].stream_window_bytes: 10 is smaller than a packet"},
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{stream_window_bytes: -3}]\n", "variants[0].stream_window_bytes: -3 is smaller than a packet"},
		{"scenario: two.yaml\napp: {size_mb: 1}\ntransport: {auto_tune: true}\nvariants: [{}, {label: b, stream_window_bytes: 100}]\n", "variants[1].stream_window_bytes: 100 is smaller than a packet"},
		{"scenario: two.yaml\napp: {size_mb: 1}\ntransport: {ack_every: 65}\nvariants: [{}]\n", "transport.ack_every: 65 is outside [1, 64]"},
		{"scenario: two.yaml\ntopology: builtin:abilene\napp: {size_mb: 1}\nvariants: [{}]\n", "scenario, topology, mobility, leo: give exactly one"},
		{"leo: {spacing_km: 300}\napp: {size_mb: 1}\nvariants: [{}]\n", "leo.footprint_km: 460 is too small"},
		{"leo: {}\napp: {size_mb: 1}\npath_counts: [1]\nvariants: [{}]\n", "path_counts: only for a scenario"},
		{"leo: {}\napp: {size_mb: 1}\nvariants: [{leo: {eta: 3}}]\n", "variants[0].leo.eta: 3 is outside"},
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{leo: {eta: 0.5}}]\n", "variants[0].leo: only with a top-level leo"},
		{"leo: {bogus: 1}\napp: {size_mb: 1}\nvariants: [{}]\n", `unknown field "bogus"`},
		{"scenario: two.yaml\napp: {size_mb: 1}\nvariants: [{}]\nbogus: 3\n", `unknown field "bogus"`},
		{"topology: island.yaml\napp: {size_mb: 1}\nflows: {count: 1, pairs: [[a, c]]}\nvariants: [{scheme: minfct}]\n", `flows.pairs[0]: no path between "a" and "c"`},
		{"topology: island.yaml\napp: {size_mb: 1}\nflows: {count: 1}\nvariants: [{scheme: minfct}]\n", "random pairs need a connected topology"},
		{"topology: builtin:abilene\napp: {size_mb: 1}\nflows: {count: 1}\nvariants: [{scheme: ospf}]\n", `variants[0].scheme: unknown scheme "ospf"`},
		{"topology: builtin:nowhere\napp: {size_mb: 1}\nflows: {count: 1}\nvariants: [{scheme: quic}]\n", "topology: load topology"},
		{"topology: builtin:abilene\napp: {size_mb: 1}\nflows: {count: 1, k: 0, alpha: -1}\nvariants: [{scheme: quic}]\n", "flows.alpha, flows.beta"},
	} {
		f := write(t, dir, "bad.yaml", "name: bad\n"+c.body)
		_, err := Load(f)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got  %v\n want one line containing %q", c.body, err, c.want)
		}
	}
}

// TestLEORun runs a short LEO experiment (sim/leo) with MACO, OLIA and
// BBR and checks what it adds: window traces, signals, shared-satellite
// goodput of the background TCP flow.
func TestLEORun(t *testing.T) {
	if testing.Short() {
		t.Skip("12 s of LEO simulation (seconds of wall time); runs without -short")
	}
	dir := t.TempDir()
	f := write(t, dir, "leo.yaml", `name: leo
leo: {spacing_km: 100, bandwidth_mhz: 2, queue_packets: 100}
duration_s: 12
bin_ms: 500
app: {kind: bulk, size_mb: 500}
x_label: spacing
variants:
  - {label: MACO, scheduler: rr, cc: maco, group: MACO, x: 100}
  - {label: OLIA, scheduler: rr, cc: olia, group: OLIA, x: 100}
  - {label: BBR, scheduler: single, cc: bbr, group: BBR, x: 100}
  - {label: MACO-80, scheduler: rr, cc: maco, group: MACO, x: 80, leo: {spacing_km: 80, random_phase: true}}
`)
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), s, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Runs {
		l := r.LEO
		if l == nil || len(l.Cwnd) != 2 || len(l.Cwnd[0]) < 20 || len(l.SharedBins) != len(l.Cwnd[0]) {
			t.Fatalf("%s: LEO result %+v", r.Label, l)
		}
		if r.GoodputMbps <= 0 {
			t.Errorf("%s: no goodput", r.Label)
		}
		shared := 0
		for _, b := range l.SharedBins {
			if b {
				shared++
			}
		}
		// R1 = 100 km: s3 half of each 14.3 s; 12 s of 0.5 s bins.
		if shared < 6 || shared > 18 {
			t.Errorf("%s: %d shared bins of %d", r.Label, shared, len(l.SharedBins))
		}
	}
	sums := res.Summaries()
	for _, x := range sums {
		if x.LEO == nil || math.IsNaN(x.LEO.SharedTCPMbps) || x.LEO.SharedTCPMbps <= 0 {
			t.Errorf("%s: shared-bottleneck TCP goodput missing: %+v", x.Label, x.LEO)
		}
	}
	out := filepath.Join(dir, "out")
	files, err := WriteAll(out, res)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"cwnd.png": false, "fct_vs_x.png": false, "MACO_seed1_cwnd.csv": false}
	for _, f := range files {
		if _, ok := want[filepath.Base(f)]; ok {
			want[filepath.Base(f)] = true
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("%s not written", k)
		}
	}
}

// TestShippedExperiments loads every file in sim/experiments.
func TestShippedExperiments(t *testing.T) {
	files, _ := filepath.Glob("../experiments/*.yaml")
	if len(files) == 0 {
		t.Fatal("no shipped experiments found")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestFriendlinessWithoutSharedBins: a run whose transfer ends before the
// subflows ever share a satellite has no shared bins; its summary says 0
// bins and 0 means (a ratio of them is then refused), not NaN, which
// summary.json cannot hold (maco-fct-delay-100's seeds 4 and 5).
func TestFriendlinessWithoutSharedBins(t *testing.T) {
	never := &RunResult{Bins: []float64{5, 6}, LEO: &LEOResult{SharedBins: []bool{false, false}, BgBins: []float64{1, 2}}}
	if mp, bg, n := friendliness([]*RunResult{never}); mp != 0 || bg != 0 || n != 0 {
		t.Errorf("no shared bins: %v, %v, %d; want 0, 0, 0", mp, bg, n)
	}
	once := &RunResult{Bins: []float64{5, 6}, LEO: &LEOResult{SharedBins: []bool{false, true}, BgBins: []float64{1, 2}}}
	if mp, bg, n := friendliness([]*RunResult{never, once}); mp != 6 || bg != 2 || n != 1 {
		t.Errorf("one shared bin: %v, %v, %d; want 6, 2, 1", mp, bg, n)
	}
}

// Every kind of run (scenario, topology, LEO) stops inside the simulation
// once its context ends and reports the context's error (Ctrl-C).
func TestRunOneStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"sim-drive", "sim-abilene-10mb", "maco-throughput"} {
		s, err := Load("../experiments/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := s.RunOne(ctx, 0, 0, s.Seed); !errors.Is(err, context.Canceled) || r != nil {
			t.Errorf("%s cancelled: %v, %v; want no result and context.Canceled", name, r, err)
		}
	}
}
